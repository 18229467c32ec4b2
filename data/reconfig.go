package data

import (
	"slices"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/recovery"
)

// reconfState is the data server's part in server replacement (thesis
// 3.3.2) and data recovery (3.3.2.3).
type reconfState struct {
	inc      uint64
	stopped  []node.Addr         // backups fenced by StopBackup until the next configuration
	degraded []bool              // per stripe: this shard's block not rebuilt (nil: none)
	nonce    uint64              // last snapshot nonce used
	recov    []*recovery.Rebuild // snapshots this server runs to rebuild its blocks
	bg       []int               // stripes the background rebuild is on
	answers  []*answer           // snapshots of other servers this server answers
	ticking  bool                // the retry timer is set
	// Derived from the fields above and kept up to date with them, so
	// that no handler or Persist scans every stripe or answer; not hashed
	// (Hash hashes what they are derived from; docs/recovery.md):
	left   int // the degraded flags set
	next   int // the background rebuild's cursor: every stripe below it is rebuilt or in a run in flight
	unsent int // answers not sent yet
	// resend lists replaced backups whose new incarnation has not yet
	// acknowledged every pending operation: the PREPAREs streamed to it
	// may have reached the old incarnation, or nobody, so the retry timer
	// streams them again.
	resend []node.Addr
	// report: this incarnation, started degraded by a replacement, has
	// rebuilt every block, and the reconfiguration service has not yet
	// acknowledged msg.Rebuilt; the retry timer re-sends it.
	report bool
}

func newReconfState(cfg msg.Config, me int) reconfState {
	return reconfState{inc: cfg.Data[me]}
}

// backupInc is the incarnation of Backups(stripe)[i], on machine m.
func (s *Server) backupInc(i, m int) uint64 {
	if i < s.cfg.Layout.F {
		return s.cfg.Parity[m]
	}
	return s.cfg.Witness[m]
}

func (s *Server) isStopped(a node.Addr) bool { return slices.Contains(s.rc.stopped, a) }

// resendPending streams to backup a, in op_num order, the PREPAREs of
// pending operations that a has not acknowledged, and reports whether
// there were any (thesis 3.3.2.2: a new parity server gets pending_ops
// first).
func (s *Server) resendPending(ctx node.Context, a node.Addr) bool {
	l := s.cfg.Layout
	any := false
	for _, p := range s.pending {
		for _, pt := range p.parts {
			for bi, bm := range l.Backups(pt.stripe) {
				if backupAddr(l, bi, bm) == a && pt.acks&(1<<bi) == 0 {
					ctx.Stream(a, pt.prep)
					any = true
				}
			}
		}
	}
	return any
}

// onStopBackup stops counting a parity server's or witness's
// acknowledgements, cached ones included, before it is replaced (thesis
// 3.3.2.2).
func (s *Server) onStopBackup(ctx node.Context, from node.Addr, m msg.StopBackup) {
	l := s.cfg.Layout
	if m.Num != s.cfg.Num+1 || m.Machine < 0 || m.Machine >= l.N {
		return
	}
	a := msg.ParityAddr(m.Machine)
	if m.Role == erasure.RoleWitness {
		a = msg.WitnessAddr(m.Machine)
	}
	if !s.isStopped(a) {
		s.rc.stopped = append(s.rc.stopped, a)
		s.forgetAcks(a)
	}
	ctx.Send(from, msg.StopBackupOK{Num: m.Num, Role: m.Role, Machine: m.Machine})
}

// reportResending tells the reconfiguration service which replaced
// backups have not caught up with this shard.
func (s *Server) reportResending(ctx node.Context) {
	ctx.Send(msg.ReconfigAddr, msg.Resending{Num: s.cfg.Num, Shard: s.me, Backups: slices.Clone(s.rc.resend)})
}

// forgetAcks clears the acknowledgements of backup a from pending_ops.
func (s *Server) forgetAcks(a node.Addr) {
	l := s.cfg.Layout
	for _, p := range s.pending {
		for j := range p.parts {
			for bi, m := range l.Backups(p.parts[j].stripe) {
				if backupAddr(l, bi, m) == a {
					p.parts[j].acks &^= 1 << bi
				}
			}
		}
	}
}

// onNewConfig moves to the next configuration. One that gives this shard a
// new data server starts it here, degraded, with the client table the
// replacement recovered; one that replaced a parity server or witness
// re-sends pending_ops to it, in op_num order, before anything else
// (3.3.2.2). Snapshots of the old configuration end (3.3.2.3).
func (s *Server) onNewConfig(ctx node.Context, from node.Addr, m msg.NewConfig) {
	fresh := m.Config.Num > s.cfg.Num && m.Config.Data[s.me] > s.rc.inc
	if m.Config.Num != s.cfg.Num+1 && !fresh {
		ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
		return
	}
	if fresh {
		pace := s.pace.Settings()
		*s = *New(m.Config, s.me)
		s.pace = pace
		l := s.cfg.Layout
		s.rc.degraded = make([]bool, l.Stripes)
		for _, st := range l.StripesAs(s.me, erasure.RoleData) {
			s.rc.degraded[st] = true
			s.rc.left++
		}
		if in := m.Install; in != nil && in.Shard == s.me {
			for _, r := range in.Clients {
				s.clients.put(r.Client, clientEntry{seq: r.Seq, done: true, reply: r.Reply})
			}
		}
		ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
		s.reportResending(ctx)
		s.noteRebuilt(ctx) // a shard without blocks has nothing to rebuild
		s.rebuildNext(ctx)
		return
	}
	s.cfg = m.Config
	s.cfgHash = node.HashOf(s.cfg)
	// Decision: a backup fenced for a replacement that this configuration
	// does not make (a data server replacement pre-empted it) lost its
	// cached acknowledgements here. It is still the same incarnation and
	// holds the PREPAREs, so it is sent the pending ones again until it
	// acknowledges them, like a new one: otherwise an operation it had
	// acknowledged could wait for it forever, since the pre-empted
	// replacement may be postponed until rebuilds that need the operation
	// to commit (SLC, the service's onRebuilt).
	var again []node.Addr
	for _, a := range s.rc.stopped {
		if a != m.Config.Changed {
			again = append(again, a)
		}
	}
	s.rc.stopped = nil
	l := s.cfg.Layout
	if role, _, err := msg.ParseAddr(m.Config.Changed); err == nil && role != "data" {
		s.forgetAcks(m.Config.Changed)
		again = append(again, m.Config.Changed)
	}
	if len(again) > 0 {
		for _, a := range again {
			s.resendPending(ctx, a)
			if !slices.Contains(s.rc.resend, a) {
				s.rc.resend = append(s.rc.resend, a)
			}
		}
		s.setTimer(ctx)
		s.reportResending(ctx)
	}
	s.dropAnswers()
	s.rc.next = 0 // the runs in flight start over under new nonces
	for i, r := range s.rc.recov {
		s.rc.nonce++
		_, me := l.RoleOf(r.Stripe, s.me)
		s.rc.recov[i] = recovery.NewRun(l, r.Stripes(l), s.rc.nonce, me)
		s.askSnapshot(ctx, s.rc.recov[i])
	}
	ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
	s.advance(ctx)
}

// noteRebuilt starts reporting to the reconfiguration service once this
// incarnation has rebuilt every block it started without: the service
// counts it as degraded until then (SLC, thesis 3.4.2). degraded becomes
// nil again, as for a server that never had anything to rebuild.
func (s *Server) noteRebuilt(ctx node.Context) {
	if s.rc.degraded == nil || s.rc.left > 0 {
		return
	}
	s.rc.degraded = nil
	s.rc.report = true
	s.reportRebuilt(ctx)
	s.setTimer(ctx)
}

// rebuilt is this incarnation's msg.Rebuilt.
func (s *Server) rebuilt() msg.Rebuilt {
	return msg.Rebuilt{Role: erasure.RoleData, Machine: s.me, Inc: s.rc.inc}
}

func (s *Server) reportRebuilt(ctx node.Context) { ctx.Send(msg.ReconfigAddr, s.rebuilt()) }

// onRebuiltOK stops re-sending msg.Rebuilt.
func (s *Server) onRebuiltOK(m msg.RebuiltOK) { s.rc.report = s.rc.report && !m.Acks(s.rebuilt()) }

func (r reconfState) clone() reconfState {
	c := r
	c.stopped = slices.Clone(r.stopped)
	c.resend = slices.Clone(r.resend)
	c.degraded = slices.Clone(r.degraded)
	c.bg = slices.Clone(r.bg)
	c.recov = recovery.CloneAll(r.recov)
	c.answers = make([]*answer, len(r.answers))
	for i, a := range r.answers {
		cp := *a
		c.answers[i] = &cp
	}
	return c
}

// hash adds the state to h, for the model checker (Server.Hash).
func (r reconfState) hash(h *node.Hasher) {
	h.Uint64(r.inc)
	node.HashStrings(h, r.stopped)
	h.Bools(r.degraded)
	h.Uint64(r.nonce)
	h.Ints(r.bg)
	h.Bool(r.ticking)
	h.Bool(r.report)
	for _, a := range r.resend {
		h.String(string(a))
	}
	for _, x := range r.recov {
		x.Hash(h)
	}
	for _, a := range r.answers {
		a.fields(h)
		h.OptBytesList(a.blocks)
	}
}

// recordHash is a hash of what the rc record holds (Server.rcRecord),
// for Persist to tell whether to rewrite it: the answers are persisted on
// their own, and the degraded flags are represented by their number,
// which every change of them changes (a flag is only ever cleared, and
// a new set of flags comes with a new incarnation), so that a Persist
// costs no pass over every stripe.
func (r reconfState) recordHash() uint64 {
	h := node.NewHasher()
	h.Uint64(r.inc)
	node.HashStrings(h, r.stopped)
	h.Bool(r.degraded != nil)
	h.Int(len(r.degraded))
	h.Int(r.left)
	h.Uint64(r.nonce)
	h.Bool(r.report)
	node.HashStrings(h, r.resend)
	return h.Sum()
}
