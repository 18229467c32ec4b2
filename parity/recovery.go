package parity

import (
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/recovery"
)

// A replacement parity server starts degraded (thesis 3.3.2.2): it takes
// part in commits at once, holding PREPAREs and keeping the deltas of
// operations that commit on stripes it has not rebuilt, and rebuilds its
// blocks one snapshot run at a time with the stripe snapshot protocol. A rebuilt
// block reflects exactly the operations numbered below each data server's
// snapshot op_num; held and kept deltas below it are not applied again
// (the snapshot op_nums are the block's version numbers, 3.3.2.3).

// The server's timers: re-asking for a rebuild's snapshot parts (and
// re-sending msg.Rebuilt), and the pause before the next rebuild.
const (
	retryRebuild  = node.TagTimer(node.TagParityRetryRebuild)
	rebuildPaused = node.TagTimer(node.TagParityRebuildPaused)
)

// SetRebuildPause makes a background run of k stripes take at least k
// times d, from its start to the next run's (0: no limit).
func (s *Server) SetRebuildPause(d time.Duration) { s.pace.Pause = max(d, 0) }

// SetRebuildWindow makes the background rebuild keep up to n runs in
// flight when there is no pause (n < 1: one).
func (s *Server) SetRebuildWindow(n int) { s.pace.Window = n }

// SetRebuildRun makes a run snapshot up to n stripes (n < 1: one).
func (s *Server) SetRebuildRun(n int) { s.pace.Run = n }

// RebuildPause is the pause set by SetRebuildPause.
func (s *Server) RebuildPause() time.Duration { return s.pace.Pause }

// Timer implements node.Node: the retry timer re-asks for a rebuild's
// parts; the pause timer starts the next rebuild.
func (s *Server) Timer(ctx node.Context, t node.Timer) {
	if t == rebuildPaused {
		s.pace.Waiting = false
		s.rebuildNext(ctx)
		return
	}
	s.rc.ticking = false
	for _, r := range s.rc.rebuilds {
		if r.Retry(&s.rc.nonce) {
			r.Ask(ctx, s.cfg.Layout, s.cfg.Num)
		}
		s.tick(ctx)
	}
	if s.rc.report {
		s.reportRebuilt(ctx)
		s.tick(ctx)
	}
}

func (s *Server) tick(ctx node.Context) {
	if !s.rc.ticking {
		s.rc.ticking = true
		ctx.SetTimer(retryRebuild, recovery.RetryMin, recovery.RetryMax)
	}
}

// rebuildNext starts background runs from the first degraded stripe not
// in flight, up to the window's runs in flight (one with a pause, whose
// timer must have fired). Once none is left, the server reports to the
// reconfiguration service, which counts it as degraded until then (SLC,
// thesis 3.4.2); degraded becomes nil again, as for a server that never
// had anything to rebuild. The scan starts at the cursor rc.next, below
// which every stripe is rebuilt or in a run in flight (a stripe leaves a
// run only rebuilt; a new configuration drops the runs and puts the
// cursor back to 0): without it every run started scanned from stripe 0.
func (s *Server) rebuildNext(ctx node.Context) {
	free := func(st int) bool {
		return s.isDegraded(st) && !slices.ContainsFunc(s.rc.rebuilds, func(r *recovery.Rebuild) bool { return r.Has(s.cfg.Layout, st) })
	}
	for len(s.rc.rebuilds) < s.pace.InFlight() && !s.pace.Waiting {
		for s.rc.next < len(s.rc.degraded) && !free(s.rc.next) {
			s.rc.next++
		}
		st := s.rc.next
		if st >= len(s.rc.degraded) {
			break
		}
		s.rc.nonce++
		sts := recovery.RunFrom(s.cfg.Layout, st, s.pace.Run, free)
		r := recovery.NewRun(s.cfg.Layout, sts, s.rc.nonce, -1)
		s.rc.rebuilds = append(s.rc.rebuilds, r)
		r.Ask(ctx, s.cfg.Layout, s.cfg.Num)
		s.tick(ctx)
		s.pace.Started(ctx, rebuildPaused, len(sts), false)
	}
	if len(s.rc.rebuilds) == 0 && s.rc.degraded != nil && s.rc.left == 0 {
		s.rc.degraded = nil
		s.rc.report = true
		s.reportRebuilt(ctx)
		s.tick(ctx)
	}
}

// run is the background run in flight that starts at stripe st, if any.
func (s *Server) run(st int) *recovery.Rebuild {
	for _, r := range s.rc.rebuilds {
		if r.Stripe == st {
			return r
		}
	}
	return nil
}

// rebuilt is this incarnation's msg.Rebuilt.
func (s *Server) rebuilt() msg.Rebuilt {
	return msg.Rebuilt{Role: erasure.RoleParity, Machine: s.me, Inc: s.rc.inc}
}

func (s *Server) reportRebuilt(ctx node.Context) { ctx.Send(msg.ReconfigAddr, s.rebuilt()) }

// onRebuiltOK stops re-sending msg.Rebuilt.
func (s *Server) onRebuiltOK(m msg.RebuiltOK) { s.rc.report = s.rc.report && !m.Acks(s.rebuilt()) }

func (s *Server) onSnapshotData(m msg.SnapshotData) {
	if r := s.run(m.Stripe); r != nil && m.Num == s.cfg.Num {
		r.OnData(s.cfg.Layout, m)
	}
}

func (s *Server) onSnapshotParity(m msg.SnapshotParity) {
	if r := s.run(m.Stripe); r != nil && m.Num == s.cfg.Num {
		r.OnParity(s.cfg.Layout, m)
	}
}

// version is the version of the blocks one run rebuilt: per data
// position of its stripes, the snapshot's primary_num and op_num; each
// block reflects exactly the operations of that primary numbered below
// op_num, and those of older primaries.
type version struct {
	stripe, count int // the run: msg.RunStripes(stripe, count, n)
	prims, opNums []uint64
}

// reflected reports whether p's delta is in a rebuilt block already.
func (s *Server) reflected(p msg.Prepare) bool {
	n := s.cfg.Layout.N
	for _, v := range s.rc.versions {
		if d := p.Stripe - v.stripe; d >= 0 && d%n == 0 && d/n < v.count {
			_, pos := s.cfg.Layout.RoleOf(p.Stripe, p.Shard)
			return p.Primary < v.prims[pos] || p.Primary == v.prims[pos] && p.OpNum < v.opNums[pos]
		}
	}
	return false
}

// tryRebuild finishes the run starting at stripe st, if one is in flight,
// once it decodes and this server has itself seen every data server's
// marker, so that every PREPARE the snapshot reflects has reached it.
func (s *Server) tryRebuild(ctx node.Context, st int) {
	r := s.run(st)
	if r == nil {
		return
	}
	l := s.cfg.Layout
	sn := s.findSnapshot(msg.ParityAddr(s.me), r.Stripe, r.Nonce)
	if sn == nil || sn.seen != 1<<l.G-1 {
		return
	}
	_, par, ok := r.Decode(l)
	if !ok {
		return
	}
	s.rc.rebuilds = slices.DeleteFunc(s.rc.rebuilds, func(o *recovery.Rebuild) bool { return o == r })
	_, idx := l.RoleOf(r.Stripe, s.me)
	sts := r.Stripes(l)
	in := map[int]bool{}
	for i, st := range sts {
		s.blocks.Put(uint64(st), par[i][idx])
		if s.rc.degraded[st] {
			s.rc.degraded[st] = false
			s.rc.left--
		}
		in[st] = true
	}
	s.rc.versions = append(s.rc.versions, version{stripe: r.Stripe, count: r.Count, prims: r.Prims, opNums: r.OpNums})
	keep := s.rc.kept[:0:0]
	for _, p := range s.rc.kept {
		switch {
		case !in[p.Stripe]:
			keep = append(keep, p)
		case !s.reflected(p):
			s.code.ApplyDelta(s.blocks.Mutable(uint64(p.Stripe)), idx, p.Pos, p.Delta)
		}
	}
	s.rc.kept = keep
	for _, h := range s.prepares.List() {
		if in[h.P.Stripe] && !h.Applied && s.reflected(h.P) {
			s.prepares.MarkApplied(h.P.Key()) // the rebuilt block has it
		}
	}
	s.rebuildNext(ctx) // with a pause, its timer may start the next run instead
}
