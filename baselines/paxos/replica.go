package paxos

import (
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// entry is one log slot. The acceptor part (bal, acc, accepted) is what
// phase 1 reports and is never forgotten until garbage collection; the
// learner part (chosen, val) is what a full replica executes. They differ
// only when an acceptor accepted a value that was not chosen. The leader
// that proposed an erasure-coded value keeps all its pieces, for
// retransmissions and catch-up.
type entry[V interface{ Hash(h *node.Hasher) }] struct {
	bal      Ballot
	acc      V
	accepted bool
	chosen   bool
	val      V
	votes    Votes // leader: members that accepted acc at the leader's ballot
	pieces   [][]byte
}

// Replica is the Multi-Paxos replica both baselines share: one member of
// a group, a full replica (acceptor, learner, state machine and potential
// leader) or an acceptor-only witness. The baseline embeds it and gives
// it an App; it implements node.Node's Init, Handle and Timer.
type Replica[V Value[V, I], I ID, P any] struct {
	app   App[V, I, P]
	p     Params
	tm    Timing
	group int
	me    int
	full  bool

	// Acceptor state.
	promised Ballot
	log      Window[entry[V]] // every full replica applied slots 1..log.Base; they are discarded

	// State machine (full replicas only; the rest is the App's).
	applied uint64 // slots 1..applied are executed
	clients ClientTable
	shared  bool // clients are shared with a clone: copy before changing

	// Leadership (full replicas only).
	role        Role
	bal         Ballot    // the ballot this replica leads or runs for
	next        uint64    // leader: the next slot to propose in
	promises    Votes     // candidate: members that promised bal
	p1          Window[P] // candidate: the reports of each slot after p1.Base, its applied prefix
	peerApplied []uint64  // leader: applied as last reported by each full replica
	hbCommit    uint64    // leader: applied when the last heartbeat went out
	hbNext      uint64    // leader: next when the last heartbeat went out
	heard       bool      // follower: heard from a leader since the last election timeout
	misses      int       // follower: election timeouts in a row without a leader

	saved persistMemo // what changed since the last Persist (persist.go)
}

// NewReplica returns member me of group g. Member 0 starts as the leader
// of the zero ballot.
func NewReplica[V Value[V, I], I ID, P any](p Params, g, me int, app App[V, I, P]) Replica[V, I, P] {
	r := Replica[V, I, P]{app: app, p: p, tm: p.Timing.WithDefaults(), group: g, me: me, full: me < p.Full}
	if r.full {
		r.clients = NewClientTable()
	}
	return r
}

// Init implements node.Node. A replica restored from a persisted state
// starts as a follower, whatever it led before: it runs phase 1 with a
// fresh ballot before it proposes again.
func (r *Replica[V, I, P]) Init(ctx node.Context) {
	if !r.full {
		return
	}
	r.setElectionTimer(ctx)
	if r.me == 0 && (!r.saved.restored || Mutant == MutantRestartLeads) {
		r.role = Leader
		r.hbCommit = r.applied
		r.next = 1
		r.peerApplied = make([]uint64, r.p.Full)
		ctx.SetTimer(HeartbeatTimer[V, I]{Ballot: r.bal}, r.tm.Heartbeat, r.tm.Heartbeat)
	}
	if r.saved.restored && Mutant == MutantRestartKeepsBallot && r.promised.Leader == r.me {
		// The bug: lead the promised ballot again after the slots the
		// replica remembers, which may not be all it proposed.
		r.role, r.bal = Leader, r.promised
		r.hbCommit = r.applied
		r.next = max(r.log.Last(), r.applied) + 1
		r.hbNext = r.next
		r.peerApplied = make([]uint64, r.p.Full)
		ctx.SetTimer(HeartbeatTimer[V, I]{Ballot: r.bal}, r.tm.Heartbeat, r.tm.Heartbeat)
	}
}

func (r *Replica[V, I, P]) setElectionTimer(ctx node.Context) {
	lo, hi := r.tm.ElectionTimeout(r.me)
	ctx.SetTimer(ElectionTimer[V, I]{}, lo, hi)
}

// Handle implements node.Node.
func (r *Replica[V, I, P]) Handle(ctx node.Context, from node.Addr, m node.Message) {
	switch m := m.(type) {
	case msg.Request:
		r.onRequest(ctx, from, m)
	case P1a[V, I]:
		r.onP1a(ctx, from, m)
	case P1b[V, I]:
		r.onP1b(ctx, m)
	case P2a[V, I]:
		r.onP2a(ctx, from, m)
	case P2b[V, I]:
		r.onP2b(ctx, m)
	case Nack[V, I]:
		r.onNack(m)
	case Heartbeat[V, I]:
		r.onHeartbeat(ctx, from, m)
	case HeartbeatOK[V, I]:
		r.onHeartbeatOK(ctx, from, m)
	case Learn[V, I]:
		r.onLearn(ctx, m)
	}
}

// Timer implements node.Node.
func (r *Replica[V, I, P]) Timer(ctx node.Context, t node.Timer) {
	switch t := t.(type) {
	case ElectionTimer[V, I]:
		r.onElectionTimer(ctx)
	case HeartbeatTimer[V, I]:
		r.onHeartbeatTimer(ctx, t)
	}
}

// Addr is the address of member i of the replica's group.
func (r *Replica[V, I, P]) Addr(i int) node.Addr { return r.p.Addr(r.group, i) }

// others calls fn for every other member of the group.
func (r *Replica[V, I, P]) others(fn func(i int, a node.Addr)) {
	for i := 0; i < r.p.Members; i++ {
		if i != r.me {
			fn(i, r.Addr(i))
		}
	}
}

// observe notes a ballot seen in a message: the promise only grows, and a
// leader or candidate of a smaller ballot steps down. fromLeader marks
// messages from the leader of b (accept requests and heartbeats).
func (r *Replica[V, I, P]) observe(b Ballot, fromLeader bool) {
	if r.promised.Less(b) {
		r.promised = b
	}
	if r.role != Follower && r.bal.Less(b) {
		r.stepDown()
	}
	if fromLeader && b == r.promised {
		r.heard = true
	}
}

func (r *Replica[V, I, P]) stepDown() {
	r.role = Follower
	r.p1.Entries = nil
	r.promises = 0
	r.peerApplied = nil
	r.heard = false
	r.misses = 0
	for i := range r.log.Entries {
		r.log.Entries[i].votes = 0
	}
	r.app.StepDown()
}

// --- Clients ---

func (r *Replica[V, I, P]) onRequest(ctx node.Context, from node.Addr, req msg.Request) {
	if !r.full {
		return
	}
	if r.role != Leader {
		if hint := r.promised.Leader; hint != r.me {
			ctx.Send(from, Redirect[V, I]{Seq: req.Seq, Group: r.group, Leader: hint})
		}
		return
	}
	v, ok := r.app.Admit(ctx, from, req)
	if !ok {
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
		if e := r.log.At(s); e != nil && e.accepted && e.acc.ID() == v.ID() {
			return // already proposed; heartbeats retransmit it
		}
	}
	pieces, ok := r.app.Pieces(v, req)
	if !ok {
		return
	}
	slot := r.next
	r.next++
	r.propose(ctx, slot, v, pieces)
}

// propose puts v (with all its pieces, if erasure-coded) in slot at the
// leader's ballot, accepts it locally and asks every other member to
// accept it. The accept requests may leave before the local acceptance
// is durable (SendsEarly); the leader's own vote counts only when its
// answer to itself arrives, which leaves once it is (selfAccept).
func (r *Replica[V, I, P]) propose(ctx node.Context, slot uint64, v V, pieces [][]byte) {
	e := r.log.Grow(slot)
	e.bal, e.accepted, e.votes, e.pieces = r.bal, true, 0, pieces
	e.acc = v.WithPiece(piece(pieces, r.me))
	r.accepted(slot, e)
	r.sendP2a(ctx, slot, e, 0)
	if Mutant == MutantSelfVoteAtOnce {
		e.votes = Vote(r.me) // the bug: counted before it is durable
		return
	}
	r.selfAccept(ctx, slot, e)
}

// selfAccept sends the leader's own P2b for slot to itself. It is not an
// early message, so the host releases it only once the batch that
// accepted the slot is durable, as a follower's.
func (r *Replica[V, I, P]) selfAccept(ctx node.Context, slot uint64, e *entry[V]) {
	ctx.Send(r.Addr(r.me), P2b[V, I]{Ballot: r.bal, Member: r.me, Slot: slot, Val: e.acc.ID()})
}

// SendsEarly implements node.EarlySender: a leader's accept requests may
// leave before the batch that proposed them is durable. Its own vote
// waits for the disk (selfAccept), and a restarted replica is a follower
// that leads again only at a higher ballot after phase 1 (Init), so a
// proposal lost with the batch is never replaced by another at its
// ballot: to the others the leader's crash is one acceptor that did not
// answer. The commit and GC points the requests carry are safe too: a
// slot is chosen once a quorum's acceptances are durable, and the GC
// point counts the leader's own applied prefix only as its durable
// HeartbeatOK to itself reports it.
//
// Replies to clients (both baselines') may leave early too. A reply's
// result follows from the chosen log, which is durable at a quorum
// whatever the leader's disk holds: a crash that loses the executing
// batch loses the leader's applied prefix, state machine and client
// table entry with it, and the restarted replica executes the same slots,
// in the same order, into the same state again (a retry meanwhile finds
// the request in the log or the new leader's client table and gets the
// same result).
func (r *Replica[V, I, P]) SendsEarly(m node.Message) bool {
	switch m.(type) {
	case P2a[V, I], msg.Reply:
		return true
	}
	return false
}

func piece(pieces [][]byte, i int) []byte {
	if pieces == nil {
		return nil
	}
	return pieces[i]
}

// sendP2a sends slot's accept request to every other member not in skip,
// each with its own piece.
func (r *Replica[V, I, P]) sendP2a(ctx node.Context, slot uint64, e *entry[V], skip Votes) {
	r.others(func(i int, a node.Addr) {
		if !skip.Has(i) {
			ctx.Send(a, P2a[V, I]{Ballot: r.bal, Member: r.me, Slot: slot, Val: e.acc.WithPiece(piece(e.pieces, i)),
				Commit: r.applied, GC: r.log.Base})
		}
	})
}

// Executed returns the last request of client c the state machine
// executed, and its reply.
func (r *Replica[V, I, P]) Executed(c uint64) (ClientEntry, bool) { return r.clients.Get(c) }

// Record makes e client c's last executed request.
func (r *Replica[V, I, P]) Record(c uint64, e ClientEntry) {
	if r.shared {
		r.clients = r.clients.Clone()
		r.shared = false
	}
	r.clients.Put(c, e)
	r.saved.clients.Mark(c)
}
