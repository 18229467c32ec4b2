package data

import (
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/recovery"
)

// The stripe snapshot protocol (thesis 3.3.2.3), data server side: as the
// recovering server rebuilding a degraded block, and as a participant
// answering another server's snapshot.

// answer is this server's part in another server's snapshot: the blocks
// of the run as they were when the snapshot arrived (one cut across all
// of them), sent once every operation executed before then has committed.
type answer struct {
	requester node.Addr
	stripe    int // the run's first stripe
	nonce     uint64
	blocks    [][]byte // per stripe of the run, nil where this server's block is degraded; nil once sent
	upto      uint64   // the last op number executed before the snapshot
	opNum     uint64
	sent      bool
	ord       uint64 // its place in rc.answers, increasing along it, for its record (not hashed: only the order matters)
}

// fields writes the answer's record fields (its hash without the blocks).
func (a *answer) fields(w node.Fields) {
	recovery.RecordHead(w, a.requester, a.stripe, a.nonce)
	w.Uint64(a.upto)
	w.Uint64(a.opNum)
	w.Bool(a.sent)
}

// addAnswer appends a to the answers. A requester has at most one answer
// per run (ansKey).
func (s *Server) addAnswer(a *answer) {
	a.ord = 1
	if n := len(s.rc.answers); n > 0 {
		a.ord = s.rc.answers[n-1].ord + 1
	}
	s.rc.answers = append(s.rc.answers, a)
	if !a.sent {
		s.rc.unsent++
	}
	s.saved.answerChanged(a, a)
}

// dropAnswer removes the i-th answer.
func (s *Server) dropAnswer(i int) {
	a := s.rc.answers[i]
	if !a.sent {
		s.rc.unsent--
	}
	s.rc.answers = slices.Delete(s.rc.answers, i, i+1)
	s.saved.answerChanged(a, nil)
}

// dropAnswers removes every answer (they end with their configuration).
func (s *Server) dropAnswers() {
	for _, a := range s.rc.answers {
		s.saved.answerChanged(a, nil)
	}
	s.rc.answers, s.rc.unsent = nil, 0
}

// markSent records answer a as sent, dropping its blocks.
func (s *Server) markSent(a *answer) {
	if !a.sent {
		s.rc.unsent--
	}
	a.sent, a.blocks = true, nil
	s.saved.answerChanged(a, a)
}

// The server's timers: re-asking for a rebuild's snapshot parts, and the
// pause before the next background rebuild.
const (
	retryRecovery = node.TagTimer(node.TagDataRetryRecovery)
	rebuildPaused = node.TagTimer(node.TagDataRebuildPaused)
)

// SetRebuildPause makes a background run of k stripes take at least k
// times d, from its start to the next run's (0: no limit). Blocks that
// requests need are rebuilt at once regardless.
func (s *Server) SetRebuildPause(d time.Duration) { s.pace.Pause = max(d, 0) }

// RebuildPause is the pause set by SetRebuildPause.
func (s *Server) RebuildPause() time.Duration { return s.pace.Pause }

// onTimer dispatches the server's timers.
func (s *Server) onTimer(ctx node.Context, t node.Timer) {
	if t == rebuildPaused {
		s.pace.Waiting = false
		s.rebuildNext(ctx)
		return
	}
	s.retry(ctx)
}

// Decision (the thesis is silent): a participant answers only once every
// operation it executed before the snapshot has committed. Otherwise a
// snapshot could include a delta that a later replacement of this data
// server discards (it follows a gap in op numbers), and the rebuilt block
// would hold an operation that never committed.

func (s *Server) isDegraded(st int) bool { return s.rc.degraded != nil && s.rc.degraded[st] }

// Degraded reports whether this shard's block of stripe st is not rebuilt.
func (s *Server) Degraded(st int) bool { return s.isDegraded(st) }

// DegradedBlocks is the number of this shard's blocks not yet rebuilt.
func (s *Server) DegradedBlocks() int { return s.rc.left }

// needsRecovery starts rebuilding every degraded block ops touch and
// reports whether there was any.
func (s *Server) needsRecovery(ctx node.Context, ops []msg.Op) bool {
	need := false
	for _, op := range ops {
		st, _ := s.cfg.Layout.Locate(op.Block)
		if s.isDegraded(st) && Mutant != "serve-degraded" {
			need = true
			s.Recover(ctx, st)
		}
	}
	return need
}

// heldRequest is a client request for blocks not yet rebuilt: it waits at
// the data server instead of being dropped, and runs once they are.
type heldRequest struct {
	from node.Addr
	req  msg.Request
}

// MaxHeld bounds the requests a data server holds; beyond it a request
// for a degraded block is dropped and the client's retry covers it.
const MaxHeld = 1024

// Decision: held requests are not persisted and belong to the incarnation
// that holds them. A restart or a new incarnation drops them (the
// client's retry covers it); a new configuration that keeps this
// incarnation keeps them, and the rebuilds they wait for start over under
// it, so a held request never runs on a block decoded from answers of an
// older configuration.

// hold keeps request r from until the blocks it needs are rebuilt. A
// client has at most one request held: its retry replaces the address
// to answer, a newer request replaces an older one.
func (s *Server) hold(from node.Addr, r msg.Request) {
	for i, h := range s.held {
		if h.req.Client != r.Client {
			continue
		}
		switch {
		case r.Seq == h.req.Seq:
			s.held[i].from = from // a retry: answer where it came from
			return
		case r.Seq < h.req.Seq:
			return
		}
		s.held = slices.Delete(s.held, i, i+1)
		break
	}
	if len(s.held) < MaxHeld {
		s.held = append(s.held, heldRequest{from: from, req: r})
	}
}

// Held is the number of requests waiting for blocks being rebuilt.
func (s *Server) Held() int { return len(s.held) }

// runHeld runs, in arrival order, the held requests whose blocks are all
// rebuilt; the others keep waiting, in order, without being handled again.
func (s *Server) runHeld(ctx node.Context) {
	held := s.held
	s.held = nil
	for _, h := range held {
		if s.waits(h.req) {
			s.held = append(s.held, h)
		} else {
			s.onRequest(ctx, h.from, h.req)
		}
	}
}

// waits reports whether request r still needs a degraded block.
func (s *Server) waits(r msg.Request) bool {
	for _, op := range r.Ops {
		if st, _ := s.cfg.Layout.Locate(op.Block); s.isDegraded(st) {
			return true
		}
	}
	return false
}

// Recover starts rebuilding this shard's block of stripe st, unless it
// is not degraded or a run in flight covers it already (a request for it
// then waits for that run). The run is a background run's length: st and
// the following degraded stripes with the same servers that no run in
// flight covers, since the blocks clients ask for next are often near.
func (s *Server) Recover(ctx node.Context, st int) {
	if s.free(st) {
		r := s.recoverRun(ctx, recovery.RunFrom(s.cfg.Layout, st, s.pace.HeldRun(), s.free))
		s.pace.HeldStarted(r.Count)
	}
}

// SetHeldRun makes a run for a held request snapshot up to n stripes (0:
// as many as a background run, SetRebuildRun).
func (s *Server) SetHeldRun(n int) { s.pace.Held = max(n, 0) }

// free reports whether stripe st is degraded and no run in flight covers it.
func (s *Server) free(st int) bool { return s.isDegraded(st) && !s.rebuilding(st) }

// rebuilding reports whether a rebuild in flight covers stripe st.
func (s *Server) rebuilding(st int) bool {
	return slices.ContainsFunc(s.rc.recov, func(r *recovery.Rebuild) bool { return r.Has(s.cfg.Layout, st) })
}

// recoverRun starts one snapshot run rebuilding the stripes sts.
func (s *Server) recoverRun(ctx node.Context, sts []int) *recovery.Rebuild {
	s.rc.nonce++
	_, me := s.cfg.Layout.RoleOf(sts[0], s.me)
	r := recovery.NewRun(s.cfg.Layout, sts, s.rc.nonce, me)
	s.rc.recov = append(s.rc.recov, r)
	s.askSnapshot(ctx, r)
	s.setTimer(ctx)
	return r
}

// askSnapshot sends STRIPE-SNAPSHOT to the data servers that have not
// answered, and this server's own marker to the stripe's parity servers.
func (s *Server) askSnapshot(ctx node.Context, r *recovery.Rebuild) {
	r.Ask(ctx, s.cfg.Layout, s.cfg.Num)
	s.mark(ctx, r.Stripe, r.Count, r.Nonce, msg.DataAddr(s.me))
}

// mark sends this server's snapshot marker down its streams to the run's
// parity servers, after every PREPARE it sent them before.
func (s *Server) mark(ctx node.Context, st, count int, nonce uint64, requester node.Addr) {
	l := s.cfg.Layout
	m := msg.SnapshotMarker{Num: s.cfg.Num, Stripe: st, Nonce: nonce, Requester: requester, Shard: s.me, Count: msg.RunCount(count)}
	for k := 0; k < l.F; k++ {
		ctx.Stream(msg.ParityAddr(l.ParityMachine(st, k)), m)
	}
}

// retry re-asks for unanswered snapshot parts, re-sends pending PREPAREs
// to replaced backups that have not acknowledged them, and re-sends an
// unacknowledged msg.Rebuilt.
func (s *Server) retry(ctx node.Context) {
	s.rc.ticking = false
	if s.rc.report {
		s.reportRebuilt(ctx)
	}
	for _, r := range s.rc.recov {
		if r.Retry(&s.rc.nonce) {
			s.askSnapshot(ctx, r)
		}
	}
	n := len(s.rc.resend)
	s.rc.resend = slices.DeleteFunc(s.rc.resend, func(a node.Addr) bool { return !s.resendPending(ctx, a) })
	if len(s.rc.resend) < n {
		s.reportResending(ctx)
	}
	s.setTimer(ctx)
}

// setTimer sets the retry timer if there is something to retry.
func (s *Server) setTimer(ctx node.Context) {
	if !s.rc.ticking && (len(s.rc.recov) > 0 || len(s.rc.resend) > 0 || s.rc.report) {
		s.rc.ticking = true
		ctx.SetTimer(retryRecovery, recovery.RetryMin, recovery.RetryMax)
	}
}

// onSnapshot answers another server's STRIPE-SNAPSHOT (3.3.2.3 step 2).
func (s *Server) onSnapshot(ctx node.Context, m msg.StripeSnapshot) {
	l := s.cfg.Layout
	sts := msg.RunStripes(m.Stripe, m.Count, l.N)
	if m.Num != s.cfg.Num || m.Stripe < 0 || sts[len(sts)-1] >= l.Stripes || m.Requester == msg.DataAddr(s.me) {
		return
	}
	role, pos := l.RoleOf(m.Stripe, s.me)
	if role != erasure.RoleData {
		return
	}
	i := slices.IndexFunc(s.rc.answers, func(a *answer) bool { return a.requester == m.Requester && a.stripe == m.Stripe })
	if i < 0 || s.rc.answers[i].nonce != m.Nonce {
		a := &answer{requester: m.Requester, stripe: m.Stripe, nonce: m.Nonce, upto: s.opNum - 1, opNum: s.opNum,
			blocks: make([][]byte, len(sts))}
		for j, st := range sts {
			if !s.isDegraded(st) {
				a.blocks[j] = s.blocks.Get(l.Block(st, pos)) // never modified in place
			}
		}
		if i >= 0 {
			s.dropAnswer(i)
		}
		s.addAnswer(a)
	}
	s.mark(ctx, m.Stripe, len(sts), m.Nonce, m.Requester)
	s.answerSnapshots(ctx)
}

// Decision: an answer forgets its blocks once sent (it stays, so that a
// repeated request under the same nonce takes no second cut). A lost
// answer is not sent again: the requester, hearing nothing, starts a new
// round under a new nonce. Kept blocks would be persisted, and hashed,
// with every later change of the server's state.

// answerSnapshots sends every answer whose operations have committed.
func (s *Server) answerSnapshots(ctx node.Context) {
	if s.rc.unsent == 0 {
		return
	}
	var open uint64 // first uncommitted op number, 0 if none
	for _, p := range s.pending {
		if !p.committed {
			open = p.opNum
			break
		}
	}
	for _, a := range s.rc.answers {
		if a.sent || open != 0 && open <= a.upto && Mutant != "snapshot-answer-uncommitted" {
			continue
		}
		ctx.Send(a.requester, msg.SnapshotData{Num: s.cfg.Num, Stripe: a.stripe, Nonce: a.nonce, Shard: s.me,
			Block: a.blocks[0], Rest: a.blocks[1:], OpNum: a.opNum, Primary: s.primary()})
		s.markSent(a)
	}
}

func (s *Server) findRecovery(num uint64, st int, nonce uint64) *recovery.Rebuild {
	if num != s.cfg.Num && Mutant != "held-old-config" {
		return nil
	}
	for _, r := range s.rc.recov {
		if r.Stripe == st && r.Nonce == nonce {
			return r
		}
	}
	return nil
}

func (s *Server) onSnapshotData(ctx node.Context, m msg.SnapshotData) {
	if r := s.findRecovery(m.Num, m.Stripe, m.Nonce); r != nil {
		r.OnData(s.cfg.Layout, m)
		s.tryDecode(ctx, r)
	}
}

func (s *Server) onSnapshotParity(ctx node.Context, m msg.SnapshotParity) {
	if r := s.findRecovery(m.Num, m.Stripe, m.Nonce); r != nil {
		r.OnParity(s.cfg.Layout, m)
		s.tryDecode(ctx, r)
	}
}

// tryDecode rebuilds the run's blocks once the snapshot can be decoded
// (3.3.2.3 step 4), installing them together.
func (s *Server) tryDecode(ctx node.Context, r *recovery.Rebuild) {
	data, ok := r.DecodeData(s.cfg.Layout)
	if !ok {
		return
	}
	l := s.cfg.Layout
	_, pos := l.RoleOf(r.Stripe, s.me)
	for i, st := range r.Stripes(l) {
		if s.isDegraded(st) {
			s.blocks.Put(l.Block(st, pos), data[i][pos])
			s.rc.degraded[st] = false
			s.rc.left--
		}
	}
	s.rc.recov = slices.DeleteFunc(s.rc.recov, func(o *recovery.Rebuild) bool { return o == r })
	s.rc.bg = slices.DeleteFunc(s.rc.bg, func(st int) bool { return st == r.Stripe })
	s.runHeld(ctx)
	s.noteRebuilt(ctx)
	s.rebuildNext(ctx)
}

// rebuildNext keeps the background rebuild going, in stripe order, with
// up to the window's runs in flight, each of up to pace.Run stripes,
// skipping stripes already being rebuilt for requests, which do not hold
// it up. With a pause, one run is in flight, and the next starts once it
// is rebuilt and its stripes times the pause have passed since it
// started: the pause limits the rate, it does not add to the rebuild time.
// While the server has client work (operations not yet acknowledged by
// every backup, held requests, or a request since the last background
// run started) and no pause is set, a background run of k stripes that
// starts delays the next start by k times pace.Busy, plus pace.Busy per
// stripe of the runs started for held requests since the last start
// (recovery.Pacing.Owed), within the window: the rebuild as a whole yields
// to the foreground, the background without stopping, and runs that take
// longer than their share (large blocks) still overlap.
//
// The scan starts at the cursor rc.next, below which every stripe is
// rebuilt or in a run in flight: a stripe leaves a run only rebuilt, and
// a new configuration, whose runs start over, puts the cursor back to 0.
// Without it every run started scanned from stripe 0, quadratic over a
// rebuild.
func (s *Server) rebuildNext(ctx node.Context) {
	busy := s.busy()
	for ; s.rc.next < len(s.rc.degraded); s.rc.next++ {
		if len(s.rc.bg) >= s.pace.InFlight() || s.pace.Waiting {
			return
		}
		if st := s.rc.next; s.free(st) {
			r := s.recoverRun(ctx, recovery.RunFrom(s.cfg.Layout, st, s.pace.Run, s.free))
			s.rc.bg = append(s.rc.bg, r.Stripe)
			s.pace.Started(ctx, rebuildPaused, r.Count, busy)
		}
	}
}

// SetRebuildBusyPause makes a background run of k stripes that starts
// while the server has client work take at least k times d, plus d per
// stripe of the runs for held requests started since the last background
// start, from its start to the next run's, when no pause is set (0: no
// limit).
func (s *Server) SetRebuildBusyPause(d time.Duration) { s.pace.Busy = max(d, 0) }

// busy reports whether the server has client work: operations not yet
// acknowledged by every backup, held requests, or a request since the
// last background run started.
func (s *Server) busy() bool { return len(s.pending) > 0 || len(s.held) > 0 || s.pace.Asked }

// noteRequest records a client request for the background rebuild's
// pacing (only while it has blocks to rebuild and a busy pace to keep).
func (s *Server) noteRequest() {
	s.pace.Asked = s.pace.Asked || s.rc.degraded != nil && s.pace.Busy > 0
}

// SetRebuildWindow makes the background rebuild keep up to n runs in
// flight when there is no pause and no client work (n < 1: one).
func (s *Server) SetRebuildWindow(n int) { s.pace.Window = n }

// SetRebuildRun makes the background rebuild snapshot up to n stripes
// per run (n < 1: one).
func (s *Server) SetRebuildRun(n int) { s.pace.Run = n }

// RebuildingRun reports whether a snapshot run of count stripes starting
// at stripe st is in flight.
func (s *Server) RebuildingRun(st, count int) bool {
	return slices.ContainsFunc(s.rc.recov, func(r *recovery.Rebuild) bool { return r.Stripe == st && r.Count == count })
}
