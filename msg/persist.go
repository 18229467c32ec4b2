package msg

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/node"
)

// Records every server persists (node.Persistent) besides its own:
//
//	meta             node.Enc: the configuration hash, then the server's
//	                 own fields; written when it changes
//	cfg              gob of the configuration the server is in; written
//	                 when its hash changes
//	rc               gob of the server's durable reconfiguration state;
//	                 written when its hash changes
//	b/<block, hex>   a block's contents (data and parity servers)
//
// StateMemo.Write writes the first three, ReadState reads them back;
// PersistBlocks and RestoreBlocks do the blocks.

// StateMemo remembers the hashes of the cfg and rc records last written,
// and the meta record. The zero memo has written nothing.
type StateMemo struct {
	cfg, rc uint64
	meta    []byte // never shared with another memo: clones keep their own
}

// Write writes meta (cfgHash, then what meta appends) if it changed, and
// cfg and rc if their hashes changed since the last Write. rc builds the
// rc record; rcHash is the hash of the state it holds.
func (m *StateMemo) Write(w node.Writer, cfg Config, cfgHash, rcHash uint64, rc func() any, meta func(*node.Enc)) {
	if m.cfg != cfgHash {
		w.Put("cfg", node.GobBytes(cfg))
		m.cfg = cfgHash
	}
	if m.rc != rcHash {
		w.Put("rc", node.GobBytes(rc()))
		m.rc = rcHash
	}
	var e node.Enc
	e.Uint64(cfgHash)
	meta(&e)
	if m.meta != nil && bytes.Equal(e.B, m.meta) {
		return
	}
	w.Put("meta", e.B)
	m.meta = bytes.Clone(e.B)
}

// Stored is what ReadState read back.
type Stored struct {
	Found  bool   // a meta record was stored (without it nothing is read)
	Config Config // the configuration the server was in
	Hash   uint64 // its hash
	RC     bool   // an rc record was stored and decoded
}

// ReadState reads back what StateMemo.Write wrote: meta (meta reads the
// server's fields after the configuration hash), the configuration
// (ReadConfig, against cur) and, if it was stored, rc into rc. who names
// the server in errors.
func ReadState(r node.Reader, who string, cur Config, meta func(*node.Dec), rc any) (Stored, error) {
	v, ok, err := r.Get("meta")
	if err != nil || !ok {
		return Stored{}, err
	}
	d := node.NewDec(v)
	st := Stored{Found: true, Hash: d.Uint64()}
	meta(d)
	if err := d.Err(); err != nil {
		return Stored{}, fmt.Errorf("%s: meta: %w", who, err)
	}
	cfg, found, err := ReadConfig(r, who, cur, st.Hash)
	if err != nil {
		return Stored{}, err
	}
	st.Config = cfg
	if !found {
		return st, nil
	}
	v, ok, err = r.Get("rc")
	if err != nil || !ok {
		return st, err
	}
	if err := node.GobDecode(v, rc); err != nil {
		return Stored{}, fmt.Errorf("%s: rc: %w", who, err)
	}
	st.RC = true
	return st, nil
}

// PersistBlocks writes the blocks changed since the last call.
func PersistBlocks(b *erasure.Blocks, w node.Writer) {
	b.TakeChanged(func(id uint64, v []byte) { w.Put(BlockKey(id), v) })
}

// BlockKey is the key PersistBlocks writes block id under.
func BlockKey(id uint64) string { return node.HexKey("b/", id, 16) }

// RestoreBlocks reads back what PersistBlocks wrote; they count as
// written. who names the server in errors.
func RestoreBlocks(b *erasure.Blocks, r node.Reader, who string) error {
	err := r.Scan("b/", func(k string, v []byte) error {
		id, err := strconv.ParseUint(strings.TrimPrefix(k, "b/"), 16, 64)
		if err != nil || len(v) != b.Size() {
			return fmt.Errorf("%s: bad block record %q (%d bytes)", who, k, len(v))
		}
		b.Put(id, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return err
	}
	b.TakeChanged(func(uint64, []byte) {})
	return nil
}
