package paxos

import "github.com/amalgam-store/amalgam/node"

// Clone returns a copy of the core for a clone of the baseline's replica,
// whose App is app. Values and pieces are immutable and shared; the
// client table is shared until one side changes it; everything else is
// copied. Clone marks the original as shared too (the model checker
// serialises Clone calls on one node).
func (r *Replica[V, I, P]) Clone(app App[V, I, P]) Replica[V, I, P] {
	r.shared = true
	c := *r
	c.app = app
	c.log = r.log.Clone()
	c.p1 = r.p1.Clone()
	c.peerApplied = append([]uint64(nil), r.peerApplied...)
	c.saved = r.saved.clone()
	return c
}

func (e *entry[V]) hash(h *node.Hasher) {
	h.Bool(e.accepted)
	if e.accepted {
		e.bal.Hash(h)
		e.acc.Hash(h)
	}
	h.Bool(e.chosen)
	if e.chosen {
		e.val.Hash(h)
	}
	h.Uint64(uint64(e.votes))
	h.Int(len(e.pieces))
	for _, p := range e.pieces {
		h.Bytes(p)
	}
}

// HashTo writes a canonical form of the core's state into h.
func (r *Replica[V, I, P]) HashTo(h *node.Hasher) {
	h.Int(r.group)
	h.Int(r.me)
	r.promised.Hash(h)
	h.Uint64(r.log.Base)
	h.Int(len(r.log.Entries))
	for i := range r.log.Entries {
		r.log.Entries[i].hash(h)
	}
	h.Uint64(r.applied)
	h.Uint64(r.clients.Sum())
	h.Int(int(r.role))
	r.bal.Hash(h)
	h.Uint64(r.next)
	h.Uint64(uint64(r.promises))
	h.Uint64(r.p1.Base)
	h.Int(len(r.p1.Entries))
	for i := range r.p1.Entries {
		r.app.HashP1(h, &r.p1.Entries[i])
	}
	h.Uint64s(r.peerApplied)
	h.Uint64(r.hbCommit)
	h.Uint64(r.hbNext)
	h.Bool(r.heard)
	h.Int(r.misses)
}

// Read-only views of a replica's state for tests, the model checker's
// invariants and status pages.

// SlotView is one log slot as a member holds it.
type SlotView[I any] struct {
	Slot     uint64
	Accepted bool   // the acceptor accepted Acc at Ballot
	Ballot   Ballot // meaningful when Accepted
	Acc      I
	Chosen   bool // the member knows Val is chosen
	Val      I
}

// Group is the replica's group (its shard).
func (r *Replica[V, I, P]) Group() int { return r.group }

// Member is the replica's index in its group.
func (r *Replica[V, I, P]) Member() int { return r.me }

// Full reports whether the replica holds the group's data (false for a
// witness).
func (r *Replica[V, I, P]) Full() bool { return r.full }

// Promised is the highest ballot the acceptor promised.
func (r *Replica[V, I, P]) Promised() Ballot { return r.promised }

// Leading reports whether the replica is the active leader of a ballot,
// and which.
func (r *Replica[V, I, P]) Leading() (Ballot, bool) { return r.bal, r.role == Leader }

// Role is "leader", "candidate" or "follower".
func (r *Replica[V, I, P]) Role() string { return r.role.String() }

// Applied is the number of slots the replica executed (0 for witnesses).
func (r *Replica[V, I, P]) Applied() uint64 { return r.applied }

// GC is the slot up to which the replica discarded its log.
func (r *Replica[V, I, P]) GC() uint64 { return r.log.Base }

// LogLen is the number of slots the replica holds.
func (r *Replica[V, I, P]) LogLen() int { return len(r.log.Entries) }

// Slots lists the slots the replica holds (after GC), in order, skipping
// slots it holds nothing for.
func (r *Replica[V, I, P]) Slots() []SlotView[I] {
	var out []SlotView[I]
	for i := range r.log.Entries {
		e := &r.log.Entries[i]
		if !e.accepted && !e.chosen {
			continue
		}
		v := SlotView[I]{Slot: r.log.Base + 1 + uint64(i), Accepted: e.accepted, Chosen: e.chosen}
		if e.accepted {
			v.Ballot, v.Acc = e.bal, e.acc.ID()
		}
		if e.chosen {
			v.Val = e.val.ID()
		}
		out = append(out, v)
	}
	return out
}
