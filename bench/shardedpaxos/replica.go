package shardedpaxos

import (
	"math/bits"
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// role is what a full replica is doing for its group.
type role uint8

const (
	follower role = iota
	candidate
	leader
)

func (r role) String() string {
	switch r {
	case candidate:
		return "candidate"
	case leader:
		return "leader"
	}
	return "follower"
}

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
	votes    uint64 // leader: members that accepted acc at the leader's ballot
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
	gc       uint64  // every full replica applied slots 1..gc; they are discarded
	log      []entry // log[i] is slot gc+1+i

	// State machine (full replicas only).
	applied uint64 // slots 1..applied are executed
	blocks  blockMap
	clients clientTable
	shared  bool // blocks and clients are shared with a clone: copy before changing

	// Leadership (full replicas only).
	role        role
	bal         Ballot   // the ballot this replica leads or runs for
	next        uint64   // leader: the next slot to propose in
	promises    uint64   // candidate: members that promised bal
	p1Base      uint64   // candidate: phase 1 covers slots after p1Base
	p1          []entry  // candidate: highest accepted value per slot, p1[i] is slot p1Base+1+i
	peerApplied []uint64 // leader: applied as last reported by each full replica
	heard       bool     // follower: heard from a leader since the last election timeout
	misses      int      // follower: election timeouts in a row without a leader
}

// NewReplica returns member me of group g. Member 0 starts as the leader
// of the zero ballot.
func NewReplica(cfg Config, g, me int) *Replica {
	r := &Replica{cfg: cfg, tm: cfg.timing(), group: g, me: me, full: cfg.IsFull(me)}
	if r.full {
		r.blocks = newBlockMap(cfg.Layout.BlockSize)
		r.clients = newClientTable()
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
		r.role = leader
		r.next = 1
		r.peerApplied = make([]uint64, r.cfg.Full())
		ctx.SetTimer(heartbeatTimer{Ballot: r.bal}, r.tm.Heartbeat, r.tm.Heartbeat)
	}
}

func (r *Replica) setElectionTimer(ctx node.Context) {
	e := r.tm.Election
	ctx.SetTimer(electionTimer{}, e*time.Duration(2+r.me), e*time.Duration(3+r.me))
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

// at returns the entry of slot s, or nil if it was garbage-collected or
// lies beyond the log's end.
func (r *Replica) at(s uint64) *entry {
	if s <= r.gc || s > r.gc+uint64(len(r.log)) {
		return nil
	}
	return &r.log[s-r.gc-1]
}

// grow returns the entry of slot s > gc, extending the log if needed.
func (r *Replica) grow(s uint64) *entry {
	for r.gc+uint64(len(r.log)) < s {
		r.log = append(r.log, entry{})
	}
	return &r.log[s-r.gc-1]
}

func (r *Replica) lastSlot() uint64 { return r.gc + uint64(len(r.log)) }

// observe notes a ballot seen in a message: the promise only grows, and a
// leader or candidate of a smaller ballot steps down. fromLeader marks
// messages from the leader of b (accept requests and heartbeats).
func (r *Replica) observe(b Ballot, fromLeader bool) {
	if r.promised.Less(b) {
		r.promised = b
	}
	if r.role != follower && r.bal.Less(b) {
		r.stepDown()
	}
	if fromLeader && b == r.promised {
		r.heard = true
	}
}

func (r *Replica) stepDown() {
	r.role = follower
	r.p1 = nil
	r.promises = 0
	r.peerApplied = nil
	r.heard = false
	r.misses = 0
	for i := range r.log {
		r.log[i].votes = 0
	}
}

// --- Clients ---

func (r *Replica) onRequest(ctx node.Context, from node.Addr, req msg.Request) {
	if !r.full {
		return
	}
	if r.role != leader {
		if hint := r.promised.Leader; hint != r.me {
			ctx.Send(from, Redirect{Seq: req.Seq, Group: r.group, Leader: hint})
		}
		return
	}
	if e, ok := r.clients.get(req.Client); ok {
		if req.Seq == e.seq {
			ctx.Send(from, e.reply) // executed; the reply was lost
			return
		}
		if req.Seq < e.seq {
			return
		}
	}
	for s := r.applied + 1; s < r.next; s++ {
		if e := r.at(s); e != nil && e.accepted && e.acc.ID() == (ID{Client: req.Client, Seq: req.Seq}) {
			return // already proposed; heartbeats retransmit it
		}
	}
	slot := r.next
	r.next++
	e := r.grow(slot)
	e.bal, e.acc, e.accepted, e.votes = r.bal, Value{Client: req.Client, Seq: req.Seq, From: from, Ops: req.Ops}, true, 1<<r.me
	r.sendP2a(ctx, slot, e, 0)
}

// sendP2a sends slot's accept request to every other member not in skip.
func (r *Replica) sendP2a(ctx node.Context, slot uint64, e *entry, skip uint64) {
	m := P2a{Ballot: r.bal, Member: r.me, Slot: slot, Val: e.acc, Commit: r.applied, GC: r.gc}
	r.others(func(i int, a node.Addr) {
		if skip&(1<<i) == 0 {
			ctx.Send(a, m)
		}
	})
}

// --- Phase 1 ---

func (r *Replica) onElectionTimer(ctx node.Context) {
	switch r.role {
	case candidate:
		m := P1a{Ballot: r.bal, Member: r.me, From: r.p1Base}
		r.others(func(i int, a node.Addr) {
			if r.promises&(1<<i) == 0 {
				ctx.Send(a, m)
			}
		})
	case follower:
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
	r.role = candidate
	r.promises = 1 << r.me
	r.p1Base = r.applied
	r.p1 = nil
	for s := r.applied + 1; s <= r.lastSlot(); s++ {
		if e := r.at(s); e != nil && e.accepted {
			r.mergeP1(Accepted{Slot: s, Ballot: e.bal, Val: e.acc})
		}
	}
	m := P1a{Ballot: r.bal, Member: r.me, From: r.p1Base}
	r.others(func(_ int, a node.Addr) { ctx.Send(a, m) })
}

func (r *Replica) mergeP1(a Accepted) {
	if a.Slot <= r.p1Base {
		return
	}
	i := int(a.Slot - r.p1Base - 1)
	for len(r.p1) <= i {
		r.p1 = append(r.p1, entry{})
	}
	if p := &r.p1[i]; !p.accepted || p.bal.Less(a.Ballot) {
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
	for s := max(m.From, r.gc) + 1; s <= r.lastSlot(); s++ {
		if e := r.at(s); e.accepted {
			acc = append(acc, Accepted{Slot: s, Ballot: e.bal, Val: e.acc})
		}
	}
	ctx.Send(from, P1b{Ballot: m.Ballot, Member: r.me, Entries: acc})
}

func (r *Replica) onP1b(ctx node.Context, m P1b) {
	if r.role != candidate || m.Ballot != r.bal || r.promises&(1<<m.Member) != 0 {
		return
	}
	r.promises |= 1 << m.Member
	for _, a := range m.Entries {
		r.mergeP1(a)
	}
	if bits.OnesCount64(r.promises) >= r.cfg.Quorum() {
		r.becomeLeader(ctx)
	}
}

// becomeLeader completes phase 1: every slot after the replica's applied
// prefix up to the highest one reported is proposed again at the new
// ballot, with the value of the highest ballot reported for it, or a no-op
// where no member of the quorum accepted anything.
func (r *Replica) becomeLeader(ctx node.Context) {
	r.role = leader
	r.peerApplied = make([]uint64, r.cfg.Full())
	end := max(r.p1Base+uint64(len(r.p1)), r.lastSlot(), r.applied)
	r.next = end + 1
	for s := r.applied + 1; s <= end; s++ {
		e := r.grow(s)
		v := Value{Noop: true}
		if i := s - r.p1Base - 1; s > r.p1Base && i < uint64(len(r.p1)) && r.p1[i].accepted {
			v = r.p1[i].acc
		} else if e.chosen {
			v = e.val
		}
		e.bal, e.acc, e.accepted, e.votes = r.bal, v, true, 1<<r.me
		r.sendP2a(ctx, s, e, 0)
	}
	r.p1 = nil
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
	if m.Slot > r.gc {
		e := r.grow(m.Slot)
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
	if r.role != leader {
		return
	}
	e := r.at(m.Slot)
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
	e.votes |= 1 << m.Member
	if bits.OnesCount64(e.votes) >= r.cfg.Quorum() {
		e.chosen, e.val = true, e.acc
		r.advance(ctx)
	}
}

func (r *Replica) onNack(m Nack) {
	if r.promised.Less(m.Promised) {
		r.promised = m.Promised
	}
	if r.role != follower && m.Ballot == r.bal && r.bal.Less(m.Promised) {
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
	for s := r.applied + 1; s <= min(commit, r.lastSlot()); s++ {
		if e := r.at(s); e.accepted && !e.chosen && !e.bal.Less(b) {
			e.chosen, e.val = true, e.acc
		}
	}
}

// collect discards the slots every full replica has applied.
func (r *Replica) collect(gc uint64) {
	if r.full {
		gc = min(gc, r.applied)
	}
	if gc <= r.gc {
		return
	}
	k := min(gc-r.gc, uint64(len(r.log)))
	r.log = slices.Clone(r.log[k:])
	r.gc = gc
}

// advance executes the chosen slots that follow the applied prefix.
func (r *Replica) advance(ctx node.Context) {
	if !r.full {
		return
	}
	for {
		e := r.at(r.applied + 1)
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
	if e, ok := r.clients.get(v.Client); ok && e.seq >= v.Seq {
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
	r.clients.put(v.Client, clientEntry{seq: v.Seq, reply: reply})
	if r.role == leader {
		ctx.Send(v.From, reply)
	}
}

// --- Heartbeats, catch-up and garbage collection ---

func (r *Replica) onHeartbeatTimer(ctx node.Context, t heartbeatTimer) {
	if r.role != leader || t.Ballot != r.bal {
		return
	}
	hb := Heartbeat{Ballot: r.bal, Member: r.me, Commit: r.applied, GC: r.gc}
	r.others(func(_ int, a node.Addr) { ctx.Send(a, hb) })
	for s := r.applied + 1; s < r.next; s++ {
		if e := r.at(s); e != nil && !e.chosen && e.bal == r.bal {
			r.sendP2a(ctx, s, e, e.votes)
		}
	}
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
	if r.role != leader || m.Ballot != r.bal || !r.cfg.IsFull(m.Member) {
		return
	}
	r.peerApplied[m.Member] = max(r.peerApplied[m.Member], m.Applied)
	if m.Applied < r.applied {
		var es []Chosen
		for s := m.Applied + 1; s <= r.applied && len(es) < r.tm.LearnBatch; s++ {
			if e := r.at(s); e != nil && e.chosen {
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
			e := r.grow(c.Slot)
			e.chosen, e.val = true, c.Val
		}
	}
	r.advance(ctx)
}
