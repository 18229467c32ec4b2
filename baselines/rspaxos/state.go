package rspaxos

import (
	"maps"

	"github.com/amalgam-store/amalgam/node"
)

// Clone implements node.Node. Values, pieces and the code are immutable
// and shared; the store and client table are shared until one side
// changes them; everything else is copied. Clone marks the original as
// shared too (the model checker serialises Clone calls on one node).
func (r *Replica) Clone() node.Node {
	r.shared = true
	c := *r
	c.changed = maps.Clone(r.changed) // not shared: each side persists its own
	c.Replica = r.Replica.Clone((*app)(&c))
	c.reads = append([]read(nil), r.reads...) // pieces are copied on write
	return &c
}

// Hash implements node.Node: a canonical hash of the whole state.
func (r *Replica) Hash() uint64 {
	h := node.NewHasher()
	r.HashTo(h)
	h.Int(len(r.store))
	h.Uint64(r.storeAcc)
	h.Int(len(r.reads))
	for _, rd := range r.reads {
		h.Uint64(rd.client)
		h.Uint64(rd.seq)
		h.String(string(rd.from))
		h.Uint64(rd.slot)
		h.Uint64(rd.block)
		h.Uint64(rd.version)
		for _, p := range rd.pieces {
			h.OptBytes(p)
		}
	}
	return h.Sum()
}
