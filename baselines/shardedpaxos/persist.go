package shardedpaxos

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state (node.Persistent, which the paxos core implements): the
// core's records (baselines/paxos/persist.go) and, on full replicas, the
// blocks the state machine wrote, under b/<block, hex> (as Amalgam's
// servers keep theirs, so the runtime's store puts large blocks in its
// block files). Blocks are written when a transaction executed in the
// batch changes them, in the same atomic write as the applied prefix that
// covers it.

var _ node.Persistent = (*Replica)(nil)

// DecodeValue implements paxos.App (messages.go).
func (a *app) DecodeValue(d *node.Dec) Value { return decodeValue(d) }

// TrackApp implements paxos.App: every block held counts as changed.
func (a *app) TrackApp() { a.blocks.changed = paxos.TrackAll(a.blocks.m) }

// PersistApp implements paxos.App: the blocks changed since the last call.
func (a *app) PersistApp(w node.Writer) {
	for id := range a.blocks.changed {
		w.Put(node.HexKey("b/", id, 16), a.blocks.m[id])
	}
	clear(a.blocks.changed)
}

// RestoreApp implements paxos.App: the blocks.
func (a *app) RestoreApp(rd node.Reader) error {
	size := a.cfg.Layout.BlockSize
	err := rd.Scan("b/", func(k string, v []byte) error {
		id, err := strconv.ParseUint(strings.TrimPrefix(k, "b/"), 16, 64)
		if err != nil || len(v) != size || !a.Full() {
			return fmt.Errorf("bad block record %q (%d bytes)", k, len(v))
		}
		a.blocks.put(id, bytes.Clone(v))
		return nil
	})
	clear(a.blocks.changed) // what was just read back is already durable
	return err
}
