package rspaxos

import (
	"github.com/amalgam-store/amalgam/node"
)

// own makes the replica's store and client table its own before it
// changes them (copy on write: most events change neither).
func (r *Replica) own() {
	if !r.shared {
		return
	}
	store := make(map[uint64]stored, len(r.store))
	for k, v := range r.store {
		store[k] = v
	}
	r.store = store
	r.clients = r.clients.Clone()
	r.shared = false
}

// Clone implements node.Node. Values, pieces and the code are immutable
// and shared; the store and client table are shared until one side
// changes them; everything else is copied. Clone marks the original as
// shared too (the model checker serialises Clone calls on one node).
func (r *Replica) Clone() node.Node {
	r.shared = true
	c := *r
	c.log = r.log.Clone()
	c.p1 = r.p1.Clone()
	for i, rs := range c.p1.Entries {
		c.p1.Entries[i] = append([]report(nil), rs...)
	}
	c.peerApplied = append([]uint64(nil), r.peerApplied...)
	c.reads = append([]read(nil), r.reads...) // pieces are copied on write
	return &c
}

func (e *entry) hash(h *node.Hasher) {
	h.Bool(e.accepted)
	if e.accepted {
		e.bal.Hash(h)
		e.acc.hash(h)
	}
	h.Bool(e.chosen)
	if e.chosen {
		e.val.hash(h)
	}
	h.Uint64(uint64(e.votes))
	h.Int(len(e.full))
	for _, p := range e.full {
		h.Bytes(p)
	}
}

// Hash implements node.Node: a canonical hash of the whole state.
func (r *Replica) Hash() uint64 {
	h := node.NewHasher()
	h.Int(r.group)
	h.Int(r.me)
	r.promised.Hash(h)
	h.Uint64(r.log.Base)
	h.Int(len(r.log.Entries))
	for i := range r.log.Entries {
		r.log.Entries[i].hash(h)
	}
	h.Uint64(r.applied)
	h.Int(len(r.store))
	h.Uint64(r.storeAcc)
	h.Uint64(r.clients.Sum())
	h.Int(int(r.role))
	r.bal.Hash(h)
	h.Uint64(r.next)
	h.Uint64(uint64(r.promises))
	h.Uint64(r.p1.Base)
	h.Int(len(r.p1.Entries))
	for _, rs := range r.p1.Entries {
		h.Int(len(rs))
		for _, rp := range rs {
			h.Int(rp.member)
			rp.bal.Hash(h)
			rp.val.hash(h)
		}
	}
	h.Int(len(r.peerApplied))
	for _, a := range r.peerApplied {
		h.Uint64(a)
	}
	h.Uint64(r.hbCommit)
	h.Uint64(r.hbNext)
	h.Int(len(r.reads))
	for _, rd := range r.reads {
		h.Uint64(rd.client)
		h.Uint64(rd.seq)
		h.String(string(rd.from))
		h.Uint64(rd.slot)
		h.Uint64(rd.block)
		h.Uint64(rd.version)
		for _, p := range rd.pieces {
			h.Bool(p != nil)
			h.Bytes(p)
		}
	}
	h.Bool(r.heard)
	h.Int(r.misses)
	return h.Sum()
}
