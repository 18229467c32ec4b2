package paxos

import "github.com/amalgam-store/amalgam/node"

// --- Phase 1 ---

func (r *Replica[V, I, P]) onElectionTimer(ctx node.Context) {
	switch r.role {
	case Candidate:
		m := P1a[V, I]{Ballot: r.bal, Member: r.me, From: r.p1.Base}
		r.others(func(i int, a node.Addr) {
			if !r.promises.Has(i) {
				ctx.Send(a, m)
			}
		})
	case Follower:
		if r.heard {
			r.heard, r.misses = false, 0
		} else if r.misses++; r.misses >= r.tm.Misses {
			r.startElection(ctx)
		}
	}
	r.setElectionTimer(ctx)
}

func (r *Replica[V, I, P]) startElection(ctx node.Context) {
	r.bal = Ballot{Round: r.promised.Round + 1, Leader: r.me}
	r.promised = r.bal
	r.role = Candidate
	r.promises = Vote(r.me)
	r.p1 = Window[P]{Base: r.applied}
	for s := r.applied + 1; s <= r.log.Last(); s++ {
		if e := r.log.At(s); e != nil && e.accepted {
			r.mergeP1(r.me, Accepted[V]{Slot: s, Ballot: e.bal, Val: e.acc})
		}
	}
	m := P1a[V, I]{Ballot: r.bal, Member: r.me, From: r.p1.Base}
	r.others(func(_ int, a node.Addr) { ctx.Send(a, m) })
}

func (r *Replica[V, I, P]) mergeP1(member int, a Accepted[V]) {
	if a.Slot <= r.p1.Base {
		return
	}
	r.app.MergeP1(r.p1.Grow(a.Slot), member, a)
}

func (r *Replica[V, I, P]) onP1a(ctx node.Context, from node.Addr, m P1a[V, I]) {
	if m.Ballot.Less(r.promised) {
		ctx.Send(from, Nack[V, I]{Ballot: m.Ballot, Member: r.me, Promised: r.promised})
		return
	}
	r.observe(m.Ballot, false)
	r.heard = true // like Raft: granting a promise restarts the election timeout
	var acc []Accepted[V]
	for s := max(m.From, r.log.Base) + 1; s <= r.log.Last(); s++ {
		if e := r.log.At(s); e.accepted {
			acc = append(acc, Accepted[V]{Slot: s, Ballot: e.bal, Val: e.acc})
		}
	}
	ctx.Send(from, P1b[V, I]{Ballot: m.Ballot, Member: r.me, Entries: acc})
}

func (r *Replica[V, I, P]) onP1b(ctx node.Context, m P1b[V, I]) {
	if r.role != Candidate || m.Ballot != r.bal || r.promises.Has(m.Member) {
		return
	}
	r.promises |= Vote(m.Member)
	for _, a := range m.Entries {
		r.mergeP1(m.Member, a)
	}
	if r.promises.Count() >= r.p.Quorum {
		r.becomeLeader(ctx)
	}
}

// becomeLeader completes phase 1: every slot after the replica's applied
// prefix up to the highest one reported is proposed again at the new
// ballot, with the value App.Recover picks from the reports.
func (r *Replica[V, I, P]) becomeLeader(ctx node.Context) {
	r.role = Leader
	r.hbCommit = r.applied
	r.peerApplied = make([]uint64, r.p.Full)
	end := max(r.p1.Last(), r.log.Last(), r.applied)
	r.next = end + 1
	r.hbNext = r.next // the re-proposals below are fresh
	for s := r.applied + 1; s <= end; s++ {
		var learned *V
		if e := r.log.At(s); e != nil && e.chosen {
			learned = &e.val
		}
		v, pieces := r.app.Recover(r.p1.At(s), learned)
		r.propose(ctx, s, v, pieces)
	}
	r.p1.Entries = nil
	r.promises = 0
	ctx.SetTimer(HeartbeatTimer[V, I]{Ballot: r.bal}, r.tm.Heartbeat, r.tm.Heartbeat)
}

// --- Phase 2 ---

func (r *Replica[V, I, P]) onP2a(ctx node.Context, from node.Addr, m P2a[V, I]) {
	if m.Ballot.Less(r.promised) {
		ctx.Send(from, Nack[V, I]{Ballot: m.Ballot, Member: r.me, Promised: r.promised})
		return
	}
	r.observe(m.Ballot, true)
	if m.Slot > r.log.Base {
		e := r.log.Grow(m.Slot)
		e.bal, e.acc, e.accepted = m.Ballot, m.Val, true
		r.accepted(m.Slot, e)
		reply := P2b[V, I]{Ballot: m.Ballot, Member: r.me, Slot: m.Slot, Val: m.Val.ID()}
		if Mutant == MutantP2bValueOnly {
			reply.Ballot = Ballot{}
		}
		ctx.Send(from, reply)
	}
	r.learnCommit(m.Ballot, m.Commit)
	r.collect(m.GC)
	r.advance(ctx)
}

func (r *Replica[V, I, P]) onP2b(ctx node.Context, m P2b[V, I]) {
	if r.role != Leader {
		return
	}
	e := r.log.At(m.Slot)
	if e == nil || e.chosen || !e.accepted || e.bal != r.bal || m.Slot >= r.next {
		return
	}
	if Mutant == MutantP2bValueOnly {
		// The bug of thesis 4.2: count any reply carrying the proposed
		// value, whatever ballot it answered.
		if m.Val != e.acc.ID() {
			return
		}
	} else if m.Ballot != r.bal {
		return
	}
	e.votes |= Vote(m.Member)
	if e.votes.Count() >= r.p.Quorum {
		e.chosen, e.val = true, e.acc
		r.touch(m.Slot, dirtyChosen)
		r.advance(ctx)
	}
}

func (r *Replica[V, I, P]) onNack(m Nack[V, I]) {
	if r.promised.Less(m.Promised) {
		r.promised = m.Promised
	}
	if r.role != Follower && m.Ballot == r.bal && r.bal.Less(m.Promised) {
		r.stepDown()
	}
}

// learnCommit marks chosen the slots up to commit that this replica
// accepted at ballot b or later: the leader of b found them chosen, and
// every value accepted for a chosen slot at or after the ballot that chose
// it is the chosen value.
func (r *Replica[V, I, P]) learnCommit(b Ballot, commit uint64) {
	if !r.full {
		return
	}
	for s := r.applied + 1; s <= min(commit, r.log.Last()); s++ {
		if e := r.log.At(s); e.accepted && !e.chosen && !e.bal.Less(b) {
			e.chosen, e.val = true, e.acc
			r.touch(s, dirtyChosen)
		}
	}
}

// collect discards the slots every full replica has applied.
func (r *Replica[V, I, P]) collect(gc uint64) {
	if r.full {
		gc = min(gc, r.applied)
	}
	r.log.Discard(gc)
}

// advance executes the chosen slots that follow the applied prefix. A
// leader whose App asks for it tells the followers the new commit point
// at once.
func (r *Replica[V, I, P]) advance(ctx node.Context) {
	if !r.full {
		return
	}
	announce := false
	for {
		e := r.log.At(r.applied + 1)
		if e == nil || !e.chosen {
			break
		}
		r.applied++
		announce = r.app.Execute(ctx, r.applied, e.val) || announce
	}
	if announce && r.role == Leader {
		r.sendHeartbeats(ctx)
	}
}

// --- Heartbeats, catch-up and garbage collection ---

func (r *Replica[V, I, P]) sendHeartbeats(ctx node.Context) {
	hb := Heartbeat[V, I]{Ballot: r.bal, Member: r.me, Commit: r.applied, GC: r.log.Base}
	r.hbCommit = r.applied
	r.others(func(_ int, a node.Addr) { ctx.Send(a, hb) })
	// The leader's own applied prefix, reported to itself once durable,
	// bounds garbage collection like the followers'.
	ctx.Send(r.Addr(r.me), HeartbeatOK[V, I]{Ballot: r.bal, Member: r.me, Applied: r.applied})
}

func (r *Replica[V, I, P]) onHeartbeatTimer(ctx node.Context, t HeartbeatTimer[V, I]) {
	if r.role != Leader || t.Ballot != r.bal {
		return
	}
	r.sendHeartbeats(ctx)
	// Retransmit the accept requests already outstanding at the last
	// heartbeat, not those sent since: resending a large value every
	// period while it is still on its way overloads a busy leader.
	for s := r.applied + 1; s < min(r.next, r.hbNext); s++ {
		if e := r.log.At(s); e != nil && !e.chosen && e.bal == r.bal {
			r.sendP2a(ctx, s, e, e.votes)
			if !e.votes.Has(r.me) {
				r.selfAccept(ctx, s, e) // lost (a crash's, or the network's)
			}
		}
	}
	r.hbNext = r.next
	ctx.SetTimer(t, r.tm.Heartbeat, r.tm.Heartbeat)
}

func (r *Replica[V, I, P]) onHeartbeat(ctx node.Context, from node.Addr, m Heartbeat[V, I]) {
	if m.Ballot.Less(r.promised) {
		ctx.Send(from, Nack[V, I]{Ballot: m.Ballot, Member: r.me, Promised: r.promised})
		return
	}
	r.observe(m.Ballot, true)
	r.learnCommit(m.Ballot, m.Commit)
	r.collect(m.GC)
	r.advance(ctx)
	ctx.Send(from, HeartbeatOK[V, I]{Ballot: m.Ballot, Member: r.me, Applied: r.applied})
}

func (r *Replica[V, I, P]) onHeartbeatOK(ctx node.Context, from node.Addr, m HeartbeatOK[V, I]) {
	if r.role != Leader || m.Ballot != r.bal || m.Member < 0 || m.Member >= r.p.Full {
		return
	}
	r.peerApplied[m.Member] = max(r.peerApplied[m.Member], m.Applied)
	// Only slots committed when the last heartbeat left: the follower
	// learns later ones from the next P2a or heartbeat, and resending
	// their values would flood it under load.
	if upto := min(r.applied, r.hbCommit); m.Applied < upto && m.Member != r.me {
		var es []Chosen[V]
		for s := m.Applied + 1; s <= upto && len(es) < r.tm.LearnBatch; s++ {
			if e := r.log.At(s); e != nil && e.chosen {
				v := e.val.WithPiece(nil)
				if e.pieces != nil && e.acc.ID() == e.val.ID() {
					v = v.WithPiece(e.pieces[m.Member])
				}
				es = append(es, Chosen[V]{Slot: s, Val: v})
			}
		}
		if len(es) > 0 {
			ctx.Send(from, Learn[V, I]{Ballot: r.bal, Member: r.me, Entries: es})
		}
	}
	gc := r.applied
	for _, a := range r.peerApplied {
		gc = min(gc, a)
	}
	r.collect(gc)
}

func (r *Replica[V, I, P]) onLearn(ctx node.Context, m Learn[V, I]) {
	if !r.full {
		return
	}
	for _, c := range m.Entries {
		if c.Slot > r.applied {
			e := r.log.Grow(c.Slot)
			e.chosen, e.val = true, c.Val
			if e.accepted && e.acc.ID() == c.Val.ID() && c.Val.PieceMissing() {
				e.val = e.acc // keep the piece this replica accepted
			}
			r.touch(c.Slot, dirtyChosen)
		}
	}
	r.advance(ctx)
}
