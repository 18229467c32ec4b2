package parity

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state of a parity server (node.Persistent), under the keys
//
//	meta                          gob of parityMeta: configuration hash, op numbers
//	b/<stripe, hex>               the stripe's parity block
//	p/<shard>/<op_num>/<stripe>   gob of a held PREPARE (hex fields)
//
// Blocks and PREPAREs are written when they change; meta on every Persist.

type parityMeta struct {
	CfgHash uint64
	OpNums  []uint64
}

var _ node.Persistent = (*Server)(nil)

// TrackChanges implements node.Persistent.
func (s *Server) TrackChanges() {
	s.blocks.Track()
	s.prepares.Track()
}

// Persist implements node.Persistent.
func (s *Server) Persist(w node.Writer) {
	s.blocks.TakeChanged(func(id uint64, v []byte) { w.Put(fmt.Sprintf("b/%016x", id), v) })
	PersistPrepares(&s.prepares, w)
	w.Put("meta", GobBytes(parityMeta{CfgHash: s.cfgHash, OpNums: s.opNums}))
}

// Restore implements node.Persistent.
func (s *Server) Restore(r node.Reader) error {
	v, ok, err := r.Get("meta")
	if err != nil || !ok {
		return err
	}
	var m parityMeta
	if err := GobDecode(v, &m); err != nil {
		return fmt.Errorf("parity/%d: meta: %w", s.me, err)
	}
	if m.CfgHash != s.cfgHash || len(m.OpNums) != len(s.opNums) {
		return fmt.Errorf("parity/%d: stored state is for another configuration (layout or incarnations changed)", s.me)
	}
	copy(s.opNums, m.OpNums)
	err = r.Scan("b/", func(k string, v []byte) error {
		id, err := strconv.ParseUint(strings.TrimPrefix(k, "b/"), 16, 64)
		if err != nil || len(v) != s.cfg.Layout.BlockSize {
			return fmt.Errorf("parity/%d: bad block record %q (%d bytes)", s.me, k, len(v))
		}
		s.blocks.Put(id, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return err
	}
	if err := RestorePrepares(&s.prepares, r); err != nil {
		return fmt.Errorf("parity/%d: %w", s.me, err)
	}
	s.blocks.TakeChanged(func(uint64, []byte) {})
	return nil
}

func prepKey(k msg.PrepKey) string {
	return fmt.Sprintf("p/%08x/%016x/%08x", uint32(k.Shard), k.OpNum, uint32(k.Stripe))
}

// PersistPrepares writes the PREPAREs added, changed or removed since the
// last call (for parity servers and witnesses).
func PersistPrepares(s *PrepareSet, w node.Writer) {
	s.TakeChanged(func(k msg.PrepKey, e Held, ok bool) {
		if ok {
			w.Put(prepKey(k), GobBytes(e))
		} else {
			w.Delete(prepKey(k))
		}
	})
}

// RestorePrepares reads back what PersistPrepares wrote.
func RestorePrepares(s *PrepareSet, r node.Reader) error {
	err := r.Scan("p/", func(k string, v []byte) error {
		var e Held
		if err := GobDecode(v, &e); err != nil {
			return fmt.Errorf("bad prepare record %q: %v", k, err)
		}
		s.put(e.P.Key(), e)
		return nil
	})
	if err != nil {
		return err
	}
	s.TakeChanged(func(msg.PrepKey, Held, bool) {})
	return nil
}

// GobBytes encodes v with encoding/gob.
func GobBytes(v any) []byte {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		panic(fmt.Sprintf("gob encoding %T: %v", v, err)) // only fixed, encodable types reach here
	}
	return b.Bytes()
}

// GobDecode decodes what GobBytes encoded.
func GobDecode(b []byte, v any) error { return gob.NewDecoder(bytes.NewReader(b)).Decode(v) }

// Stored is the number of parity blocks the server holds.
func (s *Server) Stored() int { return s.blocks.Len() }
