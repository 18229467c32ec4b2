package rspaxos

import (
	"slices"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// entry is one log slot: the acceptor part (bal, acc, accepted), the
// learner part (chosen, val) and, at the leader that proposed a PUT, every
// piece of it (full), for retransmissions and catch-up.
type entry struct {
	bal      Ballot
	acc      Value
	accepted bool
	chosen   bool
	val      Value
	votes    paxos.Votes
	full     [][]byte
}

// report is one accepted slot a member reported in phase 1.
type report struct {
	member int
	bal    Ballot
	val    Value
}

// stored is a replica's piece of one block.
type stored struct {
	version uint64 // slot of the PUT that wrote it
	piece   []byte
	missing bool // the replica learned the PUT without its piece
}

// read is a GET the leader executed and is decoding.
type read struct {
	client, seq uint64
	from        node.Addr
	slot        uint64
	block       uint64
	version     uint64
	pieces      [][]byte // by member; nil until received
}

// Replica is one member of an RSPaxos group: acceptor, learner, holder of
// one piece of every block, and potential leader. It is a node.Node.
type Replica struct {
	cfg   Config
	tm    Timing
	code  *erasure.Code // shared, immutable
	group int
	me    int

	promised Ballot
	log      paxos.Window[entry] // every replica applied slots 1..log.Base; they are discarded

	applied  uint64
	store    map[uint64]stored
	storeAcc uint64 // XOR of the stored entries' hashes
	clients  paxos.ClientTable
	shared   bool // store and clients are shared with a clone: copy before changing

	role        paxos.Role
	bal         Ballot
	next        uint64
	promises    paxos.Votes
	p1          paxos.Window[[]report] // candidate: the reports of each slot after p1.Base
	peerApplied []uint64
	hbCommit    uint64 // leader: applied when the last heartbeat went out
	hbNext      uint64 // leader: next when the last heartbeat went out
	reads       []read // leader: GETs being decoded, by client
	heard       bool
	misses      int
}

// NewReplica returns member me of group g; code is Config.NewCode's.
// Member 0 starts as the leader of the zero ballot.
func NewReplica(cfg Config, code *erasure.Code, g, me int) *Replica {
	return &Replica{cfg: cfg, tm: cfg.Timing.WithDefaults(), code: code, group: g, me: me,
		store: map[uint64]stored{}, clients: paxos.NewClientTable()}
}

// Init implements node.Node.
func (r *Replica) Init(ctx node.Context) {
	r.setElectionTimer(ctx)
	if r.me == 0 {
		r.role = paxos.Leader
		r.hbCommit = r.applied
		r.next = 1
		r.peerApplied = make([]uint64, r.cfg.Members())
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
	case PieceReply:
		r.onPiece(ctx, m)
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

func (r *Replica) others(fn func(i int, a node.Addr)) {
	for i := 0; i < r.cfg.Members(); i++ {
		if i != r.me {
			fn(i, r.addr(i))
		}
	}
}

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
	r.reads = nil
	r.heard = false
	r.misses = 0
	for i := range r.log.Entries {
		r.log.Entries[i].votes = 0
	}
}

// --- Coding ---

// encode splits a block into f+1 data pieces and adds 2f parity pieces.
func (r *Replica) encode(block []byte) [][]byte {
	k, size := r.cfg.DataPieces(), r.cfg.PieceSize()
	data := make([][]byte, k)
	for i := range data {
		data[i] = make([]byte, size)
		if lo := i * size; lo < len(block) {
			copy(data[i], block[lo:])
		}
	}
	parity, err := r.code.Encode(data)
	if err != nil {
		panic("rspaxos: encode: " + err.Error())
	}
	return append(data, parity...)
}

// decode rebuilds all pieces from at least f+1 of them (nil: missing).
func (r *Replica) decode(pieces [][]byte) ([][]byte, bool) {
	shards := slices.Clone(pieces)
	n := 0
	for _, p := range shards {
		if p != nil {
			n++
		}
	}
	if n < r.cfg.DataPieces() {
		return nil, false
	}
	if err := r.code.ReconstructData(shards); err != nil {
		return nil, false
	}
	return r.encode(r.join(shards)), true
}

// join concatenates the data pieces into a block.
func (r *Replica) join(pieces [][]byte) []byte {
	b := make([]byte, 0, r.cfg.PieceSize()*r.cfg.DataPieces())
	for _, p := range pieces[:r.cfg.DataPieces()] {
		b = append(b, p...)
	}
	return b[:r.cfg.Layout.BlockSize]
}

// --- Clients ---

// opKind classifies a request: a whole-block GET or PUT of a block of
// this shard, or neither.
func (r *Replica) opKind(req msg.Request) (Kind, bool) {
	l := r.cfg.Layout
	if len(req.Ops) != 1 {
		return Noop, false
	}
	op := req.Ops[0]
	if op.Block >= l.NumBlocks() || l.Shard(op.Block) != r.group || op.Offset != 0 {
		return Noop, false
	}
	switch {
	case op.Kind == msg.OpRead && (op.Length == 0 || op.Length == l.BlockSize):
		return Get, true
	case op.Kind == msg.OpWrite && len(op.Data) == l.BlockSize:
		return Put, true
	}
	return Noop, false
}

// ErrUnsupported is the error RSPaxos replicas return for anything but a
// whole-block GET or PUT of their shard (the Client never sends one).
const ErrUnsupported = "rspaxos: only whole-block GET and PUT of one block of the shard are supported"

func (r *Replica) onRequest(ctx node.Context, from node.Addr, req msg.Request) {
	if r.role != paxos.Leader {
		if hint := r.promised.Leader; hint != r.me {
			ctx.Send(from, Redirect{Seq: req.Seq, Group: r.group, Leader: hint})
		}
		return
	}
	kind, ok := r.opKind(req)
	if !ok {
		ctx.Send(from, msg.Reply{Seq: req.Seq, Err: ErrUnsupported})
		return
	}
	if e, ok := r.clients.Get(req.Client); ok {
		if req.Seq == e.Seq {
			ctx.Send(from, e.Reply) // a PUT executed; the reply was lost
			return
		}
		if req.Seq < e.Seq {
			return
		}
	}
	id := ID{Kind: kind, Client: req.Client, Seq: req.Seq}
	for s := r.applied + 1; s < r.next; s++ {
		if e := r.log.At(s); e != nil && e.accepted && e.acc.ID() == id {
			return // already proposed; heartbeats retransmit it
		}
	}
	for _, rd := range r.reads {
		if rd.client == req.Client && rd.seq == req.Seq {
			return // being decoded
		}
	}
	v := Value{Kind: kind, Client: req.Client, Seq: req.Seq, From: from, Block: req.Ops[0].Block}
	var full [][]byte
	if kind == Put {
		full = r.encode(req.Ops[0].Data)
	}
	slot := r.next
	r.next++
	r.propose(ctx, slot, v, full)
}

// propose puts v (with all its pieces, for a PUT) in slot at the leader's
// ballot, accepts it locally and asks every other member to accept it.
func (r *Replica) propose(ctx node.Context, slot uint64, v Value, full [][]byte) {
	e := r.log.Grow(slot)
	e.bal, e.accepted, e.votes, e.full = r.bal, true, paxos.Vote(r.me), full
	e.acc = v.withPiece(r.piece(full, r.me))
	r.sendP2a(ctx, slot, e, 0)
}

func (r *Replica) piece(full [][]byte, i int) []byte {
	if full == nil {
		return nil
	}
	return full[i]
}

func (r *Replica) sendP2a(ctx node.Context, slot uint64, e *entry, skip paxos.Votes) {
	r.others(func(i int, a node.Addr) {
		if !skip.Has(i) {
			ctx.Send(a, P2a{Ballot: r.bal, Member: r.me, Slot: slot, Val: e.acc.withPiece(r.piece(e.full, i)),
				Commit: r.applied, GC: r.log.Base})
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
	r.p1 = paxos.Window[[]report]{Base: r.applied}
	for s := r.applied + 1; s <= r.log.Last(); s++ {
		if e := r.log.At(s); e.accepted {
			r.mergeP1(r.me, Accepted{Slot: s, Ballot: e.bal, Val: e.acc})
		}
	}
	m := P1a{Ballot: r.bal, Member: r.me, From: r.p1.Base}
	r.others(func(_ int, a node.Addr) { ctx.Send(a, m) })
}

func (r *Replica) mergeP1(member int, a Accepted) {
	if a.Slot <= r.p1.Base {
		return
	}
	reps := r.p1.Grow(a.Slot)
	*reps = append(*reps, report{member: member, bal: a.Ballot, val: a.Val})
}

func (r *Replica) onP1a(ctx node.Context, from node.Addr, m P1a) {
	if m.Ballot.Less(r.promised) {
		ctx.Send(from, Nack{Ballot: m.Ballot, Member: r.me, Promised: r.promised})
		return
	}
	r.observe(m.Ballot, false)
	r.heard = true
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
		r.mergeP1(m.Member, a)
	}
	if r.promises.Count() >= r.cfg.Quorum() {
		r.becomeLeader(ctx)
	}
}

// recover picks the value to propose again for one slot from the phase 1
// reports: the value of the highest ballot, rebuilt from the pieces of it
// that the quorum holds. A PUT with fewer than f+1 pieces there cannot
// have been chosen (a chosen value has f+1 pieces in every quorum), and
// neither can anything else, so a no-op is safe.
func (r *Replica) recover(reps []report) (Value, [][]byte) {
	if len(reps) == 0 {
		return Value{}, nil
	}
	best := reps[0]
	for _, rp := range reps[1:] {
		if best.bal.Less(rp.bal) {
			best = rp
		}
	}
	v := best.val
	if v.Kind != Put {
		return v, nil
	}
	pieces := make([][]byte, r.cfg.Members())
	for _, rp := range reps {
		if rp.val.ID() == v.ID() && rp.val.Piece != nil {
			pieces[rp.member] = rp.val.Piece
		}
	}
	full, ok := r.decode(pieces)
	if !ok {
		return Value{}, nil
	}
	return v.withPiece(nil), full
}

func (r *Replica) becomeLeader(ctx node.Context) {
	r.role = paxos.Leader
	r.hbCommit = r.applied
	r.peerApplied = make([]uint64, r.cfg.Members())
	end := max(r.p1.Last(), r.log.Last(), r.applied)
	r.next = end + 1
	r.hbNext = r.next // the re-proposals below are fresh
	for s := r.applied + 1; s <= end; s++ {
		var reps []report
		if p := r.p1.At(s); p != nil {
			reps = *p
		}
		v, full := r.recover(reps)
		r.propose(ctx, s, v, full)
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
		ctx.Send(from, P2b{Ballot: m.Ballot, Member: r.me, Slot: m.Slot, Val: m.Val.ID()})
	}
	r.learnCommit(m.Ballot, m.Commit)
	r.collect(m.GC)
	r.advance(ctx)
}

func (r *Replica) onP2b(ctx node.Context, m P2b) {
	if r.role != paxos.Leader || m.Ballot != r.bal {
		return
	}
	e := r.log.At(m.Slot)
	if e == nil || e.chosen || !e.accepted || e.bal != r.bal || m.Slot >= r.next {
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

func (r *Replica) learnCommit(b Ballot, commit uint64) {
	for s := r.applied + 1; s <= min(commit, r.log.Last()); s++ {
		if e := r.log.At(s); e.accepted && !e.chosen && !e.bal.Less(b) {
			e.chosen, e.val = true, e.acc
		}
	}
}

func (r *Replica) collect(gc uint64) {
	r.log.Discard(min(gc, r.applied))
}

// advance executes the chosen slots after the applied prefix. A leader
// that executed a GET tells the followers at once, so that they execute it
// too and send their pieces.
func (r *Replica) advance(ctx node.Context) {
	gets := false
	for {
		e := r.log.At(r.applied + 1)
		if e == nil || !e.chosen {
			break
		}
		r.applied++
		gets = r.execute(ctx, r.applied, e.val) || gets
	}
	if gets && r.role == paxos.Leader {
		hb := Heartbeat{Ballot: r.bal, Member: r.me, Commit: r.applied, GC: r.log.Base}
		r.hbCommit = r.applied
		r.others(func(_ int, a node.Addr) { ctx.Send(a, hb) })
	}
}

func (r *Replica) putStored(b uint64, st stored) {
	r.own()
	if old, ok := r.store[b]; ok {
		r.storeAcc ^= old.hash(b)
	}
	r.store[b] = st
	r.storeAcc ^= st.hash(b)
}

func (st stored) hash(b uint64) uint64 {
	h := node.NewHasher()
	h.Uint64(b)
	h.Uint64(st.version)
	h.Bytes(st.piece)
	h.Bool(st.missing)
	return h.Sum()
}

// execute runs chosen slot s; it reports whether it was a GET.
func (r *Replica) execute(ctx node.Context, s uint64, v Value) bool {
	switch v.Kind {
	case Put:
		if e, ok := r.clients.Get(v.Client); ok && e.Seq >= v.Seq {
			return false // a retried PUT chosen twice runs once
		}
		r.putStored(v.Block, stored{version: s, piece: v.Piece, missing: v.Piece == nil})
		reply := msg.Reply{Seq: v.Seq, Outcome: msg.Outcome{Results: []msg.Result{{}}}}
		r.own()
		r.clients.Put(v.Client, paxos.ClientEntry{Seq: v.Seq, Reply: reply})
		if r.role == paxos.Leader {
			ctx.Send(v.From, reply)
		}
	case Get:
		st, ok := r.store[v.Block]
		if !ok {
			st.piece = make([]byte, r.cfg.PieceSize()) // never written: zeros
		}
		if r.role != paxos.Leader {
			if l := r.promised.Leader; l != r.me {
				ctx.Send(r.addr(l), PieceReply{Member: r.me, Slot: s, Block: v.Block, Version: st.version,
					Piece: st.piece, Missing: st.missing})
			}
			return true
		}
		rd := read{client: v.Client, seq: v.Seq, from: v.From, slot: s, block: v.Block, version: st.version,
			pieces: make([][]byte, r.cfg.Members())}
		if !st.missing {
			rd.pieces[r.me] = st.piece
		}
		r.reads = slices.DeleteFunc(r.reads, func(x read) bool { return x.client == v.Client })
		i, _ := slices.BinarySearchFunc(r.reads, v.Client, func(x read, c uint64) int { return cmpU64(x.client, c) })
		r.reads = slices.Insert(r.reads, i, rd)
		r.finishRead(ctx, i)
		return true
	}
	return false
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (r *Replica) onPiece(ctx node.Context, m PieceReply) {
	if r.role != paxos.Leader || m.Missing || m.Member < 0 || m.Member >= r.cfg.Members() {
		return
	}
	for i := range r.reads {
		rd := &r.reads[i]
		if rd.slot == m.Slot && rd.block == m.Block && rd.version == m.Version && rd.pieces[m.Member] == nil {
			rd.pieces = slices.Clone(rd.pieces)
			rd.pieces[m.Member] = m.Piece
			r.finishRead(ctx, i)
			return
		}
	}
}

// finishRead answers read i if it has f+1 pieces.
func (r *Replica) finishRead(ctx node.Context, i int) {
	rd := r.reads[i]
	full, ok := r.decode(rd.pieces)
	if !ok {
		return
	}
	ctx.Send(rd.from, msg.Reply{Seq: rd.seq, Outcome: msg.Outcome{Results: []msg.Result{{Data: r.join(full)}}}})
	r.reads = slices.Delete(r.reads, i, i+1)
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
	ctx.Send(from, HeartbeatOK{Ballot: m.Ballot, Member: r.me, Applied: r.applied})
}

func (r *Replica) onHeartbeatOK(ctx node.Context, from node.Addr, m HeartbeatOK) {
	if r.role != paxos.Leader || m.Ballot != r.bal || m.Member < 0 || m.Member >= r.cfg.Members() {
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
				v := e.val.withPiece(nil)
				if e.full != nil && e.acc.ID() == e.val.ID() {
					v.Piece = e.full[m.Member]
				}
				es = append(es, Chosen{Slot: s, Val: v})
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
	for _, c := range m.Entries {
		if c.Slot > r.applied {
			e := r.log.Grow(c.Slot)
			e.chosen, e.val = true, c.Val
			if e.accepted && e.acc.ID() == c.Val.ID() && c.Val.Piece == nil {
				e.val = e.acc // keep the piece this replica accepted
			}
		}
	}
	r.advance(ctx)
}
