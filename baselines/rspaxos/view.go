package rspaxos

import "github.com/amalgam-store/amalgam/baselines/paxos"

// Read-only views of a replica's state for tests, the model checker's
// invariants and status pages.

// SlotView is one log slot as a member holds it.
type SlotView struct {
	Slot     uint64
	Accepted bool   // the acceptor accepted Acc at Ballot
	Ballot   Ballot // meaningful when Accepted
	Acc      ID
	Chosen   bool // the member knows Val is chosen
	Val      ID
}

// Group is the replica's group (its shard).
func (r *Replica) Group() int { return r.group }

// Member is the replica's index in its group.
func (r *Replica) Member() int { return r.me }

// Promised is the highest ballot the acceptor promised.
func (r *Replica) Promised() Ballot { return r.promised }

// Leading reports whether the replica is the active leader of a ballot,
// and which.
func (r *Replica) Leading() (Ballot, bool) { return r.bal, r.role == paxos.Leader }

// Role is "leader", "candidate" or "follower".
func (r *Replica) Role() string { return r.role.String() }

// Applied is the number of slots the replica executed.
func (r *Replica) Applied() uint64 { return r.applied }

// GC is the slot up to which the replica discarded its log.
func (r *Replica) GC() uint64 { return r.log.Base }

// LogLen is the number of slots the replica holds.
func (r *Replica) LogLen() int { return len(r.log.Entries) }

// Slots lists the slots the replica holds (after GC), in order, skipping
// slots it holds nothing for.
func (r *Replica) Slots() []SlotView {
	var out []SlotView
	for i := range r.log.Entries {
		e := &r.log.Entries[i]
		if !e.accepted && !e.chosen {
			continue
		}
		v := SlotView{Slot: r.log.Base + 1 + uint64(i), Accepted: e.accepted, Chosen: e.chosen}
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

// Piece returns the replica's piece of block b, the slot of the PUT that
// wrote it (0: never written) and whether the replica holds it (false when
// it learned that PUT without its piece). Callers must not modify it.
func (r *Replica) Piece(b uint64) (piece []byte, version uint64, ok bool) {
	st, found := r.store[b]
	if !found {
		return make([]byte, r.cfg.PieceSize()), 0, true
	}
	return st.piece, st.version, !st.missing
}

// StoredBytes is the number of piece bytes the replica stores.
func (r *Replica) StoredBytes() int {
	n := 0
	for _, st := range r.store {
		n += len(st.piece)
	}
	return n
}

// Reads is the number of GETs the leader is decoding.
func (r *Replica) Reads() int { return len(r.reads) }
