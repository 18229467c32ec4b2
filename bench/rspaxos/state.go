package rspaxos

import (
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// clientTable gives at-most-once execution: the last executed request of
// each client and its reply. Entries are immutable values; acc is the XOR
// of the entries' hashes, kept up to date by put, so hashing is O(1).
type clientTable struct {
	m   map[uint64]clientEntry
	acc uint64
}

type clientEntry struct {
	seq   uint64
	reply msg.Reply
}

func newClientTable() clientTable { return clientTable{m: map[uint64]clientEntry{}} }

func (t *clientTable) get(c uint64) (clientEntry, bool) {
	e, ok := t.m[c]
	return e, ok
}

func (t *clientTable) put(c uint64, e clientEntry) {
	if old, ok := t.m[c]; ok {
		t.acc ^= old.hash(c)
	}
	t.m[c] = e
	t.acc ^= e.hash(c)
}

func (t clientTable) clone() clientTable {
	if t.m == nil {
		return t
	}
	c := clientTable{m: make(map[uint64]clientEntry, len(t.m)), acc: t.acc}
	for k, v := range t.m {
		c.m[k] = v
	}
	return c
}

func (e clientEntry) hash(c uint64) uint64 {
	h := node.NewHasher()
	h.Uint64(c)
	h.Uint64(e.seq)
	e.reply.Hash(h)
	return h.Sum()
}

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
	r.clients = r.clients.clone()
	r.shared = false
}

// Clone implements node.Node. Values, pieces and the code are immutable
// and shared; the store and client table are shared until one side
// changes them; everything else is copied. Clone marks the original as
// shared too (the model checker serialises Clone calls on one node).
func (r *Replica) Clone() node.Node {
	r.shared = true
	c := *r
	c.log = append([]entry(nil), r.log...)
	c.p1 = make([][]report, len(r.p1))
	for i, rs := range r.p1 {
		c.p1[i] = append([]report(nil), rs...)
	}
	c.peerApplied = append([]uint64(nil), r.peerApplied...)
	c.reads = append([]read(nil), r.reads...) // pieces are copied on write
	return &c
}

func (e *entry) hash(h *node.Hasher) {
	h.Bool(e.accepted)
	if e.accepted {
		e.bal.hash(h)
		e.acc.hash(h)
	}
	h.Bool(e.chosen)
	if e.chosen {
		e.val.hash(h)
	}
	h.Uint64(e.votes)
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
	r.promised.hash(h)
	h.Uint64(r.gc)
	h.Int(len(r.log))
	for i := range r.log {
		r.log[i].hash(h)
	}
	h.Uint64(r.applied)
	h.Int(len(r.store))
	h.Uint64(r.storeAcc)
	h.Uint64(r.clients.acc)
	h.Int(int(r.role))
	r.bal.hash(h)
	h.Uint64(r.next)
	h.Uint64(r.promises)
	h.Uint64(r.p1Base)
	h.Int(len(r.p1))
	for _, rs := range r.p1 {
		h.Int(len(rs))
		for _, rp := range rs {
			h.Int(rp.member)
			rp.bal.hash(h)
			rp.val.hash(h)
		}
	}
	h.Int(len(r.peerApplied))
	for _, a := range r.peerApplied {
		h.Uint64(a)
	}
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
