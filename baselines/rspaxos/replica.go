package rspaxos

import (
	"cmp"
	"maps"
	"slices"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

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
// one piece of every block, and potential leader. It is the paxos core
// with a piece store and the leader's GET decoding. It is a node.Node.
type Replica struct {
	paxos.Replica[Value, ID, []report] // phase 1 keeps every report of a slot
	cfg                                Config
	code                               *erasure.Code // shared, immutable
	store                              map[uint64]stored
	storeAcc                           uint64        // XOR of the stored entries' hashes
	shared                             bool          // store is shared with a clone: copy before changing
	changed                            paxos.Changed // blocks whose piece changed since the last Persist
	reads                              []read        // leader: GETs being decoded, by client
}

// app is the Replica as the core's paxos.App.
type app Replica

// NewReplica returns member me of group g; code is Config.NewCode's.
// Member 0 starts as the leader of the zero ballot.
func NewReplica(cfg Config, code *erasure.Code, g, me int) *Replica {
	r := &Replica{cfg: cfg, code: code, store: map[uint64]stored{}}
	r.Replica = paxos.NewReplica(cfg.params(), g, me, (*app)(r))
	return r
}

// Handle implements node.Node.
func (r *Replica) Handle(ctx node.Context, from node.Addr, m node.Message) {
	if p, ok := m.(PieceReply); ok {
		r.onPiece(ctx, p)
		return
	}
	r.Replica.Handle(ctx, from, m)
}

func (r *Replica) leading() bool {
	_, ok := r.Leading()
	return ok
}

// StepDown implements paxos.App.
func (a *app) StepDown() { a.reads = nil }

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

// opKind classifies a request: a whole-block GET or PUT of a block of
// this shard, or neither.
func (r *Replica) opKind(req msg.Request) (Kind, bool) {
	l := r.cfg.Layout
	if len(req.Ops) != 1 {
		return Noop, false
	}
	op := req.Ops[0]
	if op.Block >= l.NumBlocks() || l.Shard(op.Block) != r.Group() || op.Offset != 0 {
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

// Admit implements paxos.App: the value of a whole-block GET or PUT.
func (a *app) Admit(ctx node.Context, from node.Addr, req msg.Request) (Value, bool) {
	kind, ok := (*Replica)(a).opKind(req)
	if !ok {
		ctx.Send(from, msg.Reply{Seq: req.Seq, Err: ErrUnsupported})
		return Value{}, false
	}
	if kind == Put && paxos.Mutant == paxos.MutantReplyAtPropose {
		ctx.Send(from, msg.Reply{Seq: req.Seq, Outcome: msg.Outcome{Results: []msg.Result{{}}}}) // the bug
	}
	return Value{Kind: kind, Client: req.Client, Seq: req.Seq, From: from, Block: req.Ops[0].Block}, true
}

// Pieces implements paxos.App: a PUT's block, encoded. A GET being
// decoded is dropped.
func (a *app) Pieces(v Value, req msg.Request) ([][]byte, bool) {
	for _, rd := range a.reads {
		if rd.client == req.Client && rd.seq == req.Seq {
			return nil, false
		}
	}
	if v.Kind != Put {
		return nil, true
	}
	return (*Replica)(a).encode(req.Ops[0].Data), true
}

// MergeP1 implements paxos.App: p keeps every report (a new slice each
// time, so that clones can share the old one).
func (a *app) MergeP1(p *[]report, member int, acc Accepted) {
	*p = append((*p)[:len(*p):len(*p)], report{member: member, bal: acc.Ballot, val: acc.Val})
}

// HashP1 implements paxos.App.
func (a *app) HashP1(h *node.Hasher, p *[]report) {
	h.Int(len(*p))
	for _, rp := range *p {
		h.Int(rp.member)
		rp.bal.Hash(h)
		rp.val.Hash(h)
	}
}

// Recover implements paxos.App: it picks the value to propose again for
// one slot from the phase 1 reports: the value of the highest ballot, rebuilt from the pieces of it
// that the quorum holds. A PUT with fewer than f+1 pieces there cannot
// have been chosen (a chosen value has f+1 pieces in every quorum), and
// neither can anything else, so a no-op is safe.
func (a *app) Recover(p *[]report, _ *Value) (Value, [][]byte) {
	if p == nil || len(*p) == 0 {
		return Value{}, nil
	}
	reps := *p
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
	pieces := make([][]byte, a.cfg.Members())
	for _, rp := range reps {
		if rp.val.ID() == v.ID() && rp.val.Piece != nil {
			pieces[rp.member] = rp.val.Piece
		}
	}
	full, ok := (*Replica)(a).decode(pieces)
	if !ok {
		return Value{}, nil
	}
	return v.WithPiece(nil), full
}

func (r *Replica) putStored(b uint64, st stored) {
	if r.shared {
		r.store = maps.Clone(r.store)
		r.shared = false
	}
	if old, ok := r.store[b]; ok {
		r.storeAcc ^= old.hash(b)
	}
	r.store[b] = st
	r.storeAcc ^= st.hash(b)
	r.changed.Mark(b)
}

// hash is the store's hash of st as block b's piece.
func (st stored) hash(b uint64) uint64 {
	h := node.NewHasher()
	st.hashTo(h, b)
	return h.Sum()
}

// hashTo adds st, as block b's piece, to h: for the store and for the
// PieceReply that carries it.
func (st stored) hashTo(h *node.Hasher, b uint64) {
	h.Uint64(b)
	h.Uint64(st.version)
	h.Bytes(st.piece)
	h.Bool(st.missing)
}

// Execute implements paxos.App: it runs chosen slot s, and asks for the
// commit point to go out at once after a GET, so that the followers
// execute it too and send their pieces.
func (a *app) Execute(ctx node.Context, s uint64, v Value) bool {
	r := (*Replica)(a)
	switch v.Kind {
	case Put:
		if e, ok := r.Executed(v.Client); ok && e.Seq >= v.Seq {
			return false // a retried PUT chosen twice runs once
		}
		r.putStored(v.Block, stored{version: s, piece: v.Piece, missing: v.Piece == nil})
		reply := msg.Reply{Seq: v.Seq, Outcome: msg.Outcome{Results: []msg.Result{{}}}}
		r.Record(v.Client, paxos.ClientEntry{Seq: v.Seq, Reply: reply})
		if r.leading() {
			ctx.Send(v.From, reply)
		}
	case Get:
		st, ok := r.store[v.Block]
		if !ok {
			st.piece = make([]byte, r.cfg.PieceSize()) // never written: zeros
		}
		me := r.Member()
		if !r.leading() {
			if l := r.Promised().Leader; l != me {
				ctx.Send(r.Addr(l), PieceReply{Member: me, Slot: s, Block: v.Block, Version: st.version,
					Piece: st.piece, Missing: st.missing})
			}
			return true
		}
		rd := read{client: v.Client, seq: v.Seq, from: v.From, slot: s, block: v.Block, version: st.version,
			pieces: make([][]byte, r.cfg.Members())}
		if !st.missing {
			rd.pieces[me] = st.piece
		}
		r.reads = slices.DeleteFunc(r.reads, func(x read) bool { return x.client == v.Client })
		i, _ := slices.BinarySearchFunc(r.reads, v.Client, func(x read, c uint64) int { return cmp.Compare(x.client, c) })
		r.reads = slices.Insert(r.reads, i, rd)
		r.finishRead(ctx, i)
		return true
	}
	return false
}

func (r *Replica) onPiece(ctx node.Context, m PieceReply) {
	if !r.leading() || m.Missing || m.Member < 0 || m.Member >= r.cfg.Members() {
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
