package shardedpaxos

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state of a replica (node.Persistent): the paxos core's records
// (paxos.Replica.PersistCore: promise, accepted and chosen slots, applied
// prefix, client table) and, on full replicas, the blocks the state
// machine wrote, under b/<block, hex> (as Amalgam's servers keep theirs,
// so the runtime's store puts large blocks in its block files). Blocks
// are written when a transaction executed in the batch changes them, in
// the same atomic write as the applied prefix that covers it.

var _ node.Persistent = (*Replica)(nil)

// codec writes values in the core's records.
var codec = paxos.Codec[Value]{Encode: encodeValue, Decode: decodeValue}

func encodeValue(e *node.Enc, v Value) {
	e.Bool(v.Noop)
	e.Uint64(v.Client)
	e.Uint64(v.Seq)
	e.String(string(v.From))
	msg.EncodeOps(e, v.Ops)
}

func decodeValue(d *node.Dec) Value {
	return Value{Noop: d.Bool(), Client: d.Uint64(), Seq: d.Uint64(), From: node.Addr(d.String()), Ops: msg.DecodeOps(d)}
}

// TrackChanges implements node.Persistent.
func (r *Replica) TrackChanges() {
	r.Replica.TrackChanges()
	if r.Full() {
		r.blocks.changed = make(map[uint64]bool, len(r.blocks.m))
		for id := range r.blocks.m {
			r.blocks.changed[id] = true
		}
	}
}

// Persist implements node.Persistent.
func (r *Replica) Persist(w node.Writer) {
	r.PersistCore(w, codec)
	for id := range r.blocks.changed {
		w.Put(blockKey(id), r.blocks.m[id])
	}
	clear(r.blocks.changed)
}

func blockKey(id uint64) string { return node.HexKey("b/", id, 16) }

// Restore implements node.Persistent. It expects the replica as
// NewReplica made it, with the configuration it ran with before.
func (r *Replica) Restore(rd node.Reader) error {
	if err := r.RestoreCore(rd, codec); err != nil {
		return err
	}
	size := r.cfg.Layout.BlockSize
	err := rd.Scan("b/", func(k string, v []byte) error {
		id, err := strconv.ParseUint(strings.TrimPrefix(k, "b/"), 16, 64)
		if err != nil || len(v) != size || !r.Full() {
			return fmt.Errorf("shardedpaxos replica %d.%d: bad block record %q (%d bytes)", r.Group(), r.Member(), k, len(v))
		}
		r.blocks.put(id, bytes.Clone(v))
		return nil
	})
	clear(r.blocks.changed) // what was just read back is already durable
	return err
}
