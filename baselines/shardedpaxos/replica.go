package shardedpaxos

import (
	"slices"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Replica is one member of a group: a full replica (acceptor, learner,
// state machine and potential leader) or, for members f+1..2f, an
// acceptor-only witness. It is the paxos core with a block store that
// runs whole transactions. It is a node.Node.
type Replica struct {
	paxos.Replica[Value, ID, p1Slot]
	cfg    Config
	blocks blockMap // full replicas only
	shared bool     // blocks are shared with a clone: copy before changing
}

// p1Slot is a candidate's phase 1 state of one slot: the accepted value
// of the highest ballot reported.
type p1Slot struct {
	bal      Ballot
	acc      Value
	accepted bool
}

// app is the Replica as the core's paxos.App.
type app Replica

// NewReplica returns member me of group g. Member 0 starts as the leader
// of the zero ballot.
func NewReplica(cfg Config, g, me int) *Replica {
	r := &Replica{cfg: cfg}
	r.Replica = paxos.NewReplica(cfg.params(), g, me, (*app)(r))
	if r.Full() {
		r.blocks = newBlockMap(cfg.Layout.BlockSize)
	}
	return r
}

// Admit implements paxos.App.
func (a *app) Admit(_ node.Context, from node.Addr, req msg.Request) (Value, bool) {
	return Value{Client: req.Client, Seq: req.Seq, From: from, Ops: req.Ops}, true
}

// Pieces implements paxos.App: values are not erasure-coded.
func (a *app) Pieces(Value, msg.Request) ([][]byte, bool) { return nil, true }

// StepDown implements paxos.App.
func (a *app) StepDown() {}

// MergeP1 implements paxos.App: p keeps the highest ballot's value.
func (a *app) MergeP1(p *p1Slot, _ int, acc paxos.Accepted[Value]) {
	if !p.accepted || p.bal.Less(acc.Ballot) {
		p.bal, p.acc, p.accepted = acc.Ballot, acc.Val, true
	}
}

// Recover implements paxos.App: the value of the highest ballot reported,
// else the value learned, else a no-op.
func (a *app) Recover(p *p1Slot, learned *Value) (Value, [][]byte) {
	switch {
	case p != nil && p.accepted:
		return p.acc, nil
	case learned != nil:
		return *learned, nil
	}
	return Value{Noop: true}, nil
}

// HashP1 implements paxos.App.
func (a *app) HashP1(h *node.Hasher, p *p1Slot) {
	h.Bool(p.accepted)
	if p.accepted {
		p.bal.Hash(h)
		p.acc.Hash(h)
	}
}

func (a *app) owns(b uint64) bool {
	l := a.cfg.Layout
	return b < l.NumBlocks() && l.Shard(b) == a.Group()
}

// Execute implements paxos.App: it runs one chosen value on the
// replica's blocks. A request already executed (the client table holds
// its sequence number or a later one) is skipped: a retried request can
// be chosen in two slots.
func (a *app) Execute(ctx node.Context, _ uint64, v Value) bool {
	if v.Noop {
		return false
	}
	if e, ok := a.Executed(v.Client); ok && e.Seq >= v.Seq {
		return false
	}
	var reply msg.Reply
	if err := msg.ValidateTxn(v.Ops, a.cfg.Layout.BlockSize, a.owns); err != nil {
		reply = msg.Reply{Seq: v.Seq, Err: err.Error()}
	} else {
		out, written := msg.Execute(v.Ops, a.blocks.get)
		ids := make([]uint64, 0, len(written))
		for b := range written {
			ids = append(ids, b)
		}
		slices.Sort(ids)
		if len(ids) > 0 && a.shared {
			a.blocks = a.blocks.clone()
			a.shared = false
		}
		for _, b := range ids {
			a.blocks.put(b, written[b])
		}
		reply = msg.Reply{Seq: v.Seq, Outcome: out}
	}
	a.Record(v.Client, paxos.ClientEntry{Seq: v.Seq, Reply: reply})
	if _, leading := a.Leading(); leading {
		ctx.Send(v.From, reply)
	}
	return false
}
