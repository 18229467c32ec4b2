package shardedpaxos

import (
	"slices"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// entry is one log slot. The acceptor part (bal, acc, accepted) is what
// phase 1 reports and is never forgotten until garbage collection; the
// learner part (chosen, val) is what a full replica executes. They differ
// only when an acceptor accepted a value that was not chosen.
type entry struct {
	bal      Ballot
	acc      Value
	accepted bool
	chosen   bool
	val      Value
	votes    paxos.Votes // leader: members that accepted acc at the leader's ballot
}

// Replica is one member of a group: a full replica (acceptor, learner,
// state machine and potential leader) or, for members f+1..2f, an
// acceptor-only witness. It is a node.Node.
type Replica struct {
	cfg   Config
	tm    Timing
	group int
	me    int
	full  bool

	// Acceptor state.
	promised Ballot
	log      paxos.Window[entry] // every full replica applied slots 1..log.Base; they are discarded

	// State machine (full replicas only).
	applied uint64 // slots 1..applied are executed
	blocks  blockMap
	clients paxos.ClientTable
	shared  bool // blocks and clients are shared with a clone: copy before changing

	// Leadership (full replicas only).
	role        paxos.Role
	bal         Ballot              // the ballot this replica leads or runs for
	next        uint64              // leader: the next slot to propose in
	promises    paxos.Votes         // candidate: members that promised bal
	p1          paxos.Window[entry] // candidate: highest accepted value per slot after p1.Base, its applied prefix
	peerApplied []uint64            // leader: applied as last reported by each full replica
	hbCommit    uint64              // leader: applied when the last heartbeat went out
	hbNext      uint64              // leader: next when the last heartbeat went out
	heard       bool                // follower: heard from a leader since the last election timeout
	misses      int                 // follower: election timeouts in a row without a leader
}

// NewReplica returns member me of group g. Member 0 starts as the leader
// of the zero ballot.
func NewReplica(cfg Config, g, me int) *Replica {
	r := &Replica{cfg: cfg, tm: cfg.Timing.WithDefaults(), group: g, me: me, full: cfg.IsFull(me)}
	if r.full {
		r.blocks = newBlockMap(cfg.Layout.BlockSize)
		r.clients = paxos.NewClientTable()
	}
	return r
}

// Init implements node.Node.
func (r *Replica) Init(ctx node.Context) {
	if !r.full {
		return
	}
	r.setElectionTimer(ctx)
	if r.me == 0 {
		r.role = paxos.Leader
		r.hbCommit = r.applied
		r.next = 1
		r.peerApplied = make([]uint64, r.cfg.Full())
		ctx.SetTimer(heartbeatTimer{Ballot: r.bal}, r.tm.Heartbeat, r.tm.Heartbeat)
	}
}

func (r *Replica) setElectionTimer(ctx node.Context) {
	lo, hi := r.tm.ElectionTimeout(r.me)
	ctx.SetTimer(electionTimer{}, lo, hi)
}

// Handle implements node.Node.
func (r *Replica) Handle(ctx node.Context, from node.Addr, m node.Message) {
	switch m := m.(type) {
	case msg.Request:
		r.onRequest(ctx, from, m)
	case P1a:
		r.onP1a(ctx, from, m)
	case P1b:
		r.onP1b(ctx, m)
	case P2a:
		r.onP2a(ctx, from, m)
	case P2b:
		r.onP2b(ctx, m)
	case Nack:
		r.onNack(m)
	case Heartbeat:
		r.onHeartbeat(ctx, from, m)
	case HeartbeatOK:
		r.onHeartbeatOK(ctx, from, m)
	case Learn:
		r.onLearn(ctx, m)
	}
}

// Timer implements node.Node.
func (r *Replica) Timer(ctx node.Context, t node.Timer) {
	switch t := t.(type) {
	case electionTimer:
		r.onElectionTimer(ctx)
	case heartbeatTimer:
		r.onHeartbeatTimer(ctx, t)
	}
}

func (r *Replica) addr(i int) node.Addr { return r.cfg.Addr(r.group, i) }

// others calls fn for every other member of the group.
func (r *Replica) others(fn func(i int, a node.Addr)) {
	for i := 0; i < r.cfg.Members(); i++ {
		if i != r.me {
			fn(i, r.addr(i))
		}
	}
}

// observe notes a ballot seen in a message: the promise only grows, and a
// leader or candidate of a smaller ballot steps down. fromLeader marks
// messages from the leader of b (accept requests and heartbeats).
func (r *Replica) observe(b Ballot, fromLeader bool) {
	if r.promised.Less(b) {
		r.promised = b
	}
	if r.role != paxos.Follower && r.bal.Less(b) {
		r.stepDown()
	}
	if fromLeader && b == r.promised {
		r.heard = true
	}
}

func (r *Replica) stepDown() {
	r.role = paxos.Follower
	r.p1.Entries = nil
	r.promises = 0
	r.peerApplied = nil
	r.heard = false
	r.misses = 0
	for i := range r.log.Entries {
		r.log.Entries[i].votes = 0
	}
}

// --- Clients ---

func (r *Replica) onRequest(ctx node.Context, from node.Addr, req msg.Request) {
	if !r.full {
		return
	}
	if r.role != paxos.Leader {
		if hint := r.promised.Leader; hint != r.me {
			ctx.Send(from, Redirect{Seq: req.Seq, Group: r.group, Leader: hint})
		}
		return
	}
	if e, ok := r.clients.Get(req.Client); ok {
		if req.Seq == e.Seq {
			ctx.Send(from, e.Reply) // executed; the reply was lost
			return
		}
		if req.Seq < e.Seq {
			return
		}
	}
	for s := r.applied + 1; s < r.next; s++ {
		if e := r.log.At(s); e != nil && e.accepted && e.acc.ID() == (ID{Client: req.Client, Seq: req.Seq}) {
			return // already proposed; heartbeats retransmit it
		}
	}
	slot := r.next
	r.next++
	e := r.log.Grow(slot)
	e.bal, e.acc, e.accepted, e.votes = r.bal, Value{Client: req.Client, Seq: req.Seq, From: from, Ops: req.Ops}, true, paxos.Vote(r.me)
	r.sendP2a(ctx, slot, e, 0)
}

// sendP2a sends slot's accept request to every other member not in skip.
func (r *Replica) sendP2a(ctx node.Context, slot uint64, e *entry, skip paxos.Votes) {
	m := P2a{Ballot: r.bal, Member: r.me, Slot: slot, Val: e.acc, Commit: r.applied, GC: r.log.Base}
	r.others(func(i int, a node.Addr) {
		if !skip.Has(i) {
			ctx.Send(a, m)
		}
	})
}

// --- Phase 1 ---

func (r *Replica) onElectionTimer(ctx node.Context) {
	switch r.role {
	case paxos.Candidate:
		m := P1a{Ballot: r.bal, Member: r.me, From: r.p1.Base}
		r.others(func(i int, a node.Addr) {
			if !r.promises.Has(i) {
				ctx.Send(a, m)
			}
		})
	case paxos.Follower:
		if r.heard {
			r.heard, r.misses = false, 0
		} else if r.misses++; r.misses >= r.tm.Misses {
			r.startElection(ctx)
		}
	}
	r.setElectionTimer(ctx)
}

func (r *Replica) startElection(ctx node.Context) {
	r.bal = Ballot{Round: r.promised.Round + 1, Leader: r.me}
	r.promised = r.bal
	r.role = paxos.Candidate
	r.promises = paxos.Vote(r.me)
	r.p1 = paxos.Window[entry]{Base: r.applied}
	for s := r.applied + 1; s <= r.log.Last(); s++ {
		if e := r.log.At(s); e != nil && e.accepted {
			r.mergeP1(Accepted{Slot: s, Ballot: e.bal, Val: e.acc})
		}
	}
	m := P1a{Ballot: r.bal, Member: r.me, From: r.p1.Base}
	r.others(func(_ int, a node.Addr) { ctx.Send(a, m) })
}

func (r *Replica) mergeP1(a Accepted) {
	if a.Slot <= r.p1.Base {
		return
	}
	if p := r.p1.Grow(a.Slot); !p.accepted || p.bal.Less(a.Ballot) {
		p.bal, p.acc, p.accepted = a.Ballot, a.Val, true
	}
}

func (r *Replica) onP1a(ctx node.Context, from node.Addr, m P1a) {
	if m.Ballot.Less(r.promised) {
		ctx.Send(from, Nack{Ballot: m.Ballot, Member: r.me, Promised: r.promised})
		return
	}
	r.observe(m.Ballot, false)
	r.heard = true // like Raft: granting a promise restarts the election timeout
	var acc []Accepted
	for s := max(m.From, r.log.Base) + 1; s <= r.log.Last(); s++ {
		if e := r.log.At(s); e.accepted {
			acc = append(acc, Accepted{Slot: s, Ballot: e.bal, Val: e.acc})
		}
	}
	ctx.Send(from, P1b{Ballot: m.Ballot, Member: r.me, Entries: acc})
}

func (r *Replica) onP1b(ctx node.Context, m P1b) {
	if r.role != paxos.Candidate || m.Ballot != r.bal || r.promises.Has(m.Member) {
		return
	}
	r.promises |= paxos.Vote(m.Member)
	for _, a := range m.Entries {
		r.mergeP1(a)
	}
	if r.promises.Count() >= r.cfg.Quorum() {
		r.becomeLeader(ctx)
	}
}

// becomeLeader completes phase 1: every slot after the replica's applied
// prefix up to the highest one reported is proposed again at the new
// ballot, with the value of the highest ballot reported for it, or a no-op
// where no member of the quorum accepted anything.
func (r *Replica) becomeLeader(ctx node.Context) {
	r.role = paxos.Leader
	r.hbCommit = r.applied
	r.peerApplied = make([]uint64, r.cfg.Full())
	end := max(r.p1.Last(), r.log.Last(), r.applied)
	r.next = end + 1
	r.hbNext = r.next // the re-proposals below are fresh
	for s := r.applied + 1; s <= end; s++ {
		e := r.log.Grow(s)
		v := Value{Noop: true}
		if p := r.p1.At(s); p != nil && p.accepted {
			v = p.acc
		} else if e.chosen {
			v = e.val
		}
		e.bal, e.acc, e.accepted, e.votes = r.bal, v, true, paxos.Vote(r.me)
		r.sendP2a(ctx, s, e, 0)
	}
	r.p1.Entries = nil
	r.promises = 0
	ctx.SetTimer(heartbeatTimer{Ballot: r.bal}, r.tm.Heartbeat, r.tm.Heartbeat)
}

// --- Phase 2 ---

func (r *Replica) onP2a(ctx node.Context, from node.Addr, m P2a) {
	if m.Ballot.Less(r.promised) {
		ctx.Send(from, Nack{Ballot: m.Ballot, Member: r.me, Promised: r.promised})
		return
	}
	r.observe(m.Ballot, true)
	if m.Slot > r.log.Base {
		e := r.log.Grow(m.Slot)
		e.bal, e.acc, e.accepted = m.Ballot, m.Val, true
		reply := P2b{Ballot: m.Ballot, Member: r.me, Slot: m.Slot, Val: m.Val.ID()}
		if Mutant == MutantP2bValueOnly {
			reply.Ballot = Ballot{}
		}
		ctx.Send(from, reply)
	}
	r.learnCommit(m.Ballot, m.Commit)
	r.collect(m.GC)
	r.advance(ctx)
}

func (r *Replica) onP2b(ctx node.Context, m P2b) {
	if r.role != paxos.Leader {
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
	e.votes |= paxos.Vote(m.Member)
	if e.votes.Count() >= r.cfg.Quorum() {
		e.chosen, e.val = true, e.acc
		r.advance(ctx)
	}
}

func (r *Replica) onNack(m Nack) {
	if r.promised.Less(m.Promised) {
		r.promised = m.Promised
	}
	if r.role != paxos.Follower && m.Ballot == r.bal && r.bal.Less(m.Promised) {
		r.stepDown()
	}
}

// learnCommit marks chosen the slots up to commit that this replica
// accepted at ballot b or later: the leader of b found them chosen, and
// every value accepted for a chosen slot at or after the ballot that chose
// it is the chosen value.
func (r *Replica) learnCommit(b Ballot, commit uint64) {
	if !r.full {
		return
	}
	for s := r.applied + 1; s <= min(commit, r.log.Last()); s++ {
		if e := r.log.At(s); e.accepted && !e.chosen && !e.bal.Less(b) {
			e.chosen, e.val = true, e.acc
		}
	}
}

// collect discards the slots every full replica has applied.
func (r *Replica) collect(gc uint64) {
	if r.full {
		gc = min(gc, r.applied)
	}
	r.log.Discard(gc)
}

// advance executes the chosen slots that follow the applied prefix.
func (r *Replica) advance(ctx node.Context) {
	if !r.full {
		return
	}
	for {
		e := r.log.At(r.applied + 1)
		if e == nil || !e.chosen {
			return
		}
		r.execute(ctx, e.val)
		r.applied++
	}
}

func (r *Replica) owns(b uint64) bool {
	l := r.cfg.Layout
	return b < l.NumBlocks() && l.Shard(b) == r.group
}

// execute runs one chosen value on the replica's state. A request already
// executed (the client table holds its sequence number or a later one) is
// skipped: a retried request can be chosen in two slots.
func (r *Replica) execute(ctx node.Context, v Value) {
	if v.Noop {
		return
	}
	if e, ok := r.clients.Get(v.Client); ok && e.Seq >= v.Seq {
		return
	}
	r.own()
	var reply msg.Reply
	if err := msg.ValidateTxn(v.Ops, r.cfg.Layout.BlockSize, r.owns); err != nil {
		reply = msg.Reply{Seq: v.Seq, Err: err.Error()}
	} else {
		out, written := msg.Execute(v.Ops, r.blocks.get)
		ids := make([]uint64, 0, len(written))
		for b := range written {
			ids = append(ids, b)
		}
		slices.Sort(ids)
		for _, b := range ids {
			r.blocks.put(b, written[b])
		}
		reply = msg.Reply{Seq: v.Seq, Outcome: out}
	}
	r.clients.Put(v.Client, paxos.ClientEntry{Seq: v.Seq, Reply: reply})
	if r.role == paxos.Leader {
		ctx.Send(v.From, reply)
	}
}

// --- Heartbeats, catch-up and garbage collection ---

func (r *Replica) onHeartbeatTimer(ctx node.Context, t heartbeatTimer) {
	if r.role != paxos.Leader || t.Ballot != r.bal {
		return
	}
	hb := Heartbeat{Ballot: r.bal, Member: r.me, Commit: r.applied, GC: r.log.Base}
	r.hbCommit = r.applied
	r.others(func(_ int, a node.Addr) { ctx.Send(a, hb) })
	// Retransmit the accept requests already outstanding at the last
	// heartbeat, not those sent since: resending a large value every
	// period while it is still on its way overloads a busy leader.
	for s := r.applied + 1; s < min(r.next, r.hbNext); s++ {
		if e := r.log.At(s); e != nil && !e.chosen && e.bal == r.bal {
			r.sendP2a(ctx, s, e, e.votes)
		}
	}
	r.hbNext = r.next
	ctx.SetTimer(t, r.tm.Heartbeat, r.tm.Heartbeat)
}

func (r *Replica) onHeartbeat(ctx node.Context, from node.Addr, m Heartbeat) {
	if m.Ballot.Less(r.promised) {
		ctx.Send(from, Nack{Ballot: m.Ballot, Member: r.me, Promised: r.promised})
		return
	}
	r.observe(m.Ballot, true)
	r.learnCommit(m.Ballot, m.Commit)
	r.collect(m.GC)
	r.advance(ctx)
	var applied uint64
	if r.full {
		applied = r.applied
	}
	ctx.Send(from, HeartbeatOK{Ballot: m.Ballot, Member: r.me, Applied: applied})
}

func (r *Replica) onHeartbeatOK(ctx node.Context, from node.Addr, m HeartbeatOK) {
	if r.role != paxos.Leader || m.Ballot != r.bal || !r.cfg.IsFull(m.Member) {
		return
	}
	r.peerApplied[m.Member] = max(r.peerApplied[m.Member], m.Applied)
	// Only slots committed when the last heartbeat left: the follower
	// learns later ones from the next P2a or heartbeat, and resending
	// their values would flood it under load.
	if upto := min(r.applied, r.hbCommit); m.Applied < upto {
		var es []Chosen
		for s := m.Applied + 1; s <= upto && len(es) < r.tm.LearnBatch; s++ {
			if e := r.log.At(s); e != nil && e.chosen {
				es = append(es, Chosen{Slot: s, Val: e.val})
			}
		}
		if len(es) > 0 {
			ctx.Send(from, Learn{Ballot: r.bal, Member: r.me, Entries: es})
		}
	}
	gc := r.applied
	for i, a := range r.peerApplied {
		if i != r.me {
			gc = min(gc, a)
		}
	}
	r.collect(gc)
}

func (r *Replica) onLearn(ctx node.Context, m Learn) {
	if !r.full {
		return
	}
	for _, c := range m.Entries {
		if c.Slot > r.applied {
			e := r.log.Grow(c.Slot)
			e.chosen, e.val = true, c.Val
		}
	}
	r.advance(ctx)
}
