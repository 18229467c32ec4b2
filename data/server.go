// Package data is Amalgam's data server (thesis 3.3.1, 3.3.4): it owns one
// shard of blocks, executes read-modify-write operations on it, and commits
// them by streaming XOR deltas to the parity servers and witnesses of each
// stripe the operation touches.
package data

import (
	"cmp"
	"slices"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/recovery"
)

// Server is one data server. It is a node.Node.
type Server struct {
	cfg     msg.Config
	me      int // machine index, also the shard number
	opNum   uint64
	pending []*pendingOp // pending_ops, in op number order
	blocks  *erasure.Blocks
	clients clientTable
	cfgHash uint64
	rc      reconfState
	held    []heldRequest   // requests waiting for blocks being rebuilt (recovery.go); not persisted
	saved   persistMemo     // what Persist last wrote (persist.go); not state
	pace    recovery.Pacing // the background rebuild's pause (recovery.go); a setting, not state
}

// pendingOp is an executed operation not yet acknowledged by every parity
// server of every stripe it touched.
type pendingOp struct {
	opNum     uint64
	client    uint64
	seq       uint64
	replyTo   node.Addr
	reply     msg.Reply
	parts     []part // one per stripe touched, by stripe number
	committed bool
}

// part tracks the acknowledgements of one stripe of an operation. Bit i of
// acks is set once Layout.Backups(stripe)[i] sent PREPARE-OK.
type part struct {
	stripe int
	acks   uint64
	prep   msg.Prepare // re-sent to a replacement parity server or witness
}

// New returns the data server of machine me in configuration cfg.
func New(cfg msg.Config, me int) *Server {
	s := &Server{cfg: cfg, me: me, opNum: 1, blocks: erasure.NewBlocks(cfg.Layout.BlockSize), clients: newClientTable(),
		rc: newReconfState(cfg, me)}
	s.cfgHash = node.HashOf(cfg)
	return s
}

// Init implements node.Node.
// After a restart it resumes rebuilding degraded blocks and re-sending to
// replaced backups (a fresh server has neither).
func (s *Server) Init(ctx node.Context) {
	s.rebuildNext(ctx)
	s.setTimer(ctx)
}

// Timer implements node.Node: the only timer retries data recovery and
// PREPAREs to replaced backups.
func (s *Server) Timer(ctx node.Context, t node.Timer) { s.onTimer(ctx, t) }

// Handle implements node.Node.
func (s *Server) Handle(ctx node.Context, from node.Addr, m node.Message) {
	switch m := m.(type) {
	case msg.Request:
		s.onRequest(ctx, from, m)
	case msg.PrepareOK:
		s.onPrepareOK(ctx, from, m)
	case msg.NewConfig:
		s.onNewConfig(ctx, from, m)
	case msg.StopBackup:
		s.onStopBackup(ctx, from, m)
	case msg.RebuiltOK:
		s.onRebuiltOK(m)
	case msg.StripeSnapshot:
		s.onSnapshot(ctx, m)
	case msg.SnapshotData:
		s.onSnapshotData(ctx, m)
	case msg.SnapshotParity:
		s.onSnapshotParity(ctx, m)
	}
}

func (s *Server) primary() uint64 { return s.cfg.Data[s.me] }

func (s *Server) owns(b uint64) bool {
	return b < s.cfg.Layout.NumBlocks() && s.cfg.Layout.Shard(b) == s.me
}

func (s *Server) onRequest(ctx node.Context, from node.Addr, r msg.Request) {
	s.noteRequest() // client work paces the background rebuild (recovery.go)
	if e, ok := s.clients.get(r.Client); ok {
		if r.Seq == e.seq && e.done {
			ctx.Send(from, e.reply) // the reply was lost: send it again
		}
		if r.Seq < e.seq || r.Seq == e.seq && (e.done || Mutant != "retry-reexecutes") {
			return // old, or still committing
		}
	}
	l := s.cfg.Layout
	if err := msg.ValidateTxn(r.Ops, l.BlockSize, s.owns); err != nil {
		reply := msg.Reply{Seq: r.Seq, Err: err.Error()}
		s.clients.put(r.Client, clientEntry{seq: r.Seq, done: true, reply: reply})
		ctx.Send(from, reply)
		return
	}
	if s.needsRecovery(ctx, r.Ops) {
		s.hold(from, r) // it runs once the blocks are rebuilt
		return
	}
	outcome, written := msg.Execute(r.Ops, s.blocks.Get)
	var stripes []int
	for _, op := range r.Ops {
		st, _ := l.Locate(op.Block)
		if !slices.Contains(stripes, st) {
			stripes = append(stripes, st)
		}
	}
	slices.Sort(stripes)
	p := &pendingOp{opNum: s.opNum, client: r.Client, seq: r.Seq, replyTo: from,
		reply: msg.Reply{Seq: r.Seq, Outcome: outcome}}
	s.opNum++
	for _, st := range stripes {
		_, pos := l.RoleOf(st, s.me)
		b := l.Block(st, pos)
		var delta []byte
		if nv, ok := written[b]; ok {
			delta = erasure.Delta(s.blocks.Get(b), nv)
			switch Mutant {
			case "delta-new-value":
				delta = append([]byte(nil), nv...)
			case "delta-after-put":
				s.blocks.Put(b, nv)
				delta = erasure.Delta(s.blocks.Get(b), nv)
			}
			s.blocks.Put(b, nv)
		}
		prep := msg.Prepare{Shard: s.me, Primary: s.primary(), OpNum: p.opNum, Stripe: st, Pos: pos,
			Delta: delta, Stripes: stripes, Client: r.Client, Seq: r.Seq}
		if len(written) > 0 {
			prep.Reply = &p.reply
		}
		for i, m := range l.Backups(st) {
			ctx.Stream(backupAddr(l, i, m), prep)
		}
		p.parts = append(p.parts, part{stripe: st, prep: prep})
	}
	s.pending = append(s.pending, p)
	s.clients.put(r.Client, clientEntry{seq: r.Seq})
}

// backupAddr is the address of Backups(stripe)[i], which is machine m.
func backupAddr(l erasure.Layout, i, m int) node.Addr {
	if i < l.F {
		return msg.ParityAddr(m)
	}
	return msg.WitnessAddr(m)
}

func (s *Server) onPrepareOK(ctx node.Context, from node.Addr, ok msg.PrepareOK) {
	if ok.Shard != s.me || ok.Primary != s.primary() {
		return
	}
	i, found := slices.BinarySearchFunc(s.pending, ok.OpNum, cmpOpNum)
	if !found {
		return
	}
	p := s.pending[i]
	l := s.cfg.Layout
	for j := range p.parts {
		if p.parts[j].stripe != ok.Stripe {
			continue
		}
		for bi, m := range l.Backups(ok.Stripe) {
			if backupAddr(l, bi, m) == from && ok.Inc == s.backupInc(bi, m) && !s.isStopped(from) {
				p.parts[j].acks |= 1 << bi
			}
		}
	}
	s.advance(ctx)
}

// advance commits every operation that has a quorum on each of its stripes
// and whose predecessors are committed, then drops those that every parity
// server holds.
func (s *Server) advance(ctx node.Context) {
	l := s.cfg.Layout
	for _, p := range s.pending {
		if p.committed {
			continue
		}
		q := l.F
		if Mutant == "commit-f-1" {
			q--
		}
		quorum := p.hasQuorum(q)
		if Mutant == "backlog-txn-first-stripe" && len(s.pending) >= 3 {
			quorum = popcount(p.parts[0].acks) >= q
		}
		if !quorum {
			if Mutant == "commit-out-of-order" || Mutant == "backlog-out-of-order" && len(s.pending) >= 3 {
				continue
			}
			break
		}
		p.committed = true
		if e, ok := s.clients.get(p.client); ok && e.seq == p.seq {
			s.clients.put(p.client, clientEntry{seq: p.seq, done: true, reply: p.reply})
			if Mutant == "forget-result" {
				s.clients.put(p.client, clientEntry{})
			}
		}
		ctx.Send(p.replyTo, p.reply)
		for _, pt := range p.parts {
			c := msg.Commit{Shard: s.me, Primary: s.primary(), OpNum: p.opNum, Stripe: pt.stripe}
			for k := 0; k < l.F; k++ {
				ctx.Stream(msg.ParityAddr(l.ParityMachine(pt.stripe, k)), c)
			}
		}
	}
	parityMask := uint64(1)<<l.F - 1
	keep := s.pending[:0]
	for _, p := range s.pending {
		if p.committed && p.allAcked(parityMask) {
			for _, pt := range p.parts {
				d := msg.PrepareDrop{Shard: s.me, Primary: s.primary(), OpNum: p.opNum, Stripe: pt.stripe}
				for i, m := range l.Backups(pt.stripe) {
					ctx.Stream(backupAddr(l, i, m), d)
				}
			}
			continue
		}
		keep = append(keep, p)
	}
	clear(s.pending[len(keep):])
	s.pending = keep
	s.answerSnapshots(ctx)
}

func cmpOpNum(p *pendingOp, n uint64) int { return cmp.Compare(p.opNum, n) }

func (p *pendingOp) hasQuorum(f int) bool {
	if Mutant == "txn-first-stripe" {
		return popcount(p.parts[0].acks) >= f
	}
	for _, pt := range p.parts {
		if popcount(pt.acks) < f {
			return false
		}
	}
	return true
}

func (p *pendingOp) allAcked(mask uint64) bool {
	for _, pt := range p.parts {
		if pt.acks&mask != mask {
			return false
		}
	}
	return true
}
