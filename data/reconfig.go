package data

import (
	"slices"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// reconfState is the data server's part in server replacement (thesis
// 3.3.2) and data recovery (3.3.2.3).
type reconfState struct {
	inc      uint64
	stopped  []node.Addr // backups fenced by StopBackup until the next configuration
	degraded []bool      // per stripe: this shard's block not rebuilt (nil: none)
	nonce    uint64      // last snapshot nonce used
	recov    []*recovery // snapshots this server runs to rebuild its blocks
	answers  []*answer   // snapshots of other servers this server answers
	ticking  bool        // the recovery retry timer is set
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
		*s = *New(m.Config, s.me)
		l := s.cfg.Layout
		s.rc.degraded = make([]bool, l.Stripes)
		for _, st := range l.StripesAs(s.me, erasure.RoleData) {
			s.rc.degraded[st] = true
		}
		if in := m.Install; in != nil && in.Shard == s.me {
			for _, r := range in.Clients {
				s.clients.put(r.Client, clientEntry{seq: r.Seq, done: true, reply: r.Reply})
			}
		}
		ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
		return
	}
	s.cfg = m.Config
	s.cfgHash = node.HashOf(s.cfg)
	s.rc.stopped = nil
	l := s.cfg.Layout
	if role, mach, err := msg.ParseAddr(m.Config.Changed); err == nil && role != "data" {
		s.forgetAcks(m.Config.Changed)
		for _, p := range s.pending {
			for _, pt := range p.parts {
				for bi, bm := range l.Backups(pt.stripe) {
					if bm == mach && backupAddr(l, bi, bm) == m.Config.Changed {
						ctx.Stream(m.Config.Changed, pt.prep)
					}
				}
			}
		}
	}
	s.rc.answers = nil
	for _, r := range s.rc.recov {
		s.rc.nonce++
		*r = recovery{stripe: r.stripe, nonce: s.rc.nonce}
		s.askSnapshot(ctx, r)
	}
	ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
	s.advance(ctx)
}

func (r reconfState) clone() reconfState {
	c := r
	c.stopped = slices.Clone(r.stopped)
	c.degraded = slices.Clone(r.degraded)
	c.recov = make([]*recovery, len(r.recov))
	for i, x := range r.recov {
		cp := *x
		cp.data = slices.Clone(x.data)
		cp.parity = slices.Clone(x.parity)
		c.recov[i] = &cp
	}
	c.answers = make([]*answer, len(r.answers))
	for i, a := range r.answers {
		cp := *a
		c.answers[i] = &cp
	}
	return c
}

func (r reconfState) hash(h *node.Hasher) {
	h.Uint64(r.inc)
	h.Int(len(r.stopped))
	for _, a := range r.stopped {
		h.String(string(a))
	}
	h.Int(len(r.degraded))
	for _, d := range r.degraded {
		h.Bool(d)
	}
	h.Uint64(r.nonce)
	h.Bool(r.ticking)
	for _, x := range r.recov {
		h.Int(x.stripe)
		h.Uint64(x.nonce)
		h.Uint64(x.dgot)
		for _, b := range append(slices.Clone(x.data), x.parity...) {
			h.Bool(b != nil)
			h.Bytes(b)
		}
	}
	for _, a := range r.answers {
		h.String(string(a.requester))
		h.Int(a.stripe)
		h.Uint64(a.nonce)
		h.Bool(a.block != nil)
		h.Bytes(a.block)
		h.Uint64(a.upto)
		h.Uint64(a.opNum)
		h.Bool(a.sent)
	}
}
