package mc

import (
	"errors"
	"math/rand/v2"
	"slices"
)

// Walks: LMC's uniform deepening confirms local states one causal bound
// at a time, and the states of a bound grow with every order in which a
// node can hear its peers. A walk goes deep instead. It starts at the end
// of an execution found to a confirmed local state (or at the initial
// state) and extends it one enabled event at a time, chosen at random.
// Walks take turns in three kinds: one favours a focus node's events and,
// among them, events that are no edge of the graph yet; one favours only
// those new events; one starts at the initial state and chooses uniformly
// (random search's walk). Each event is applied with State.Apply (global
// semantics, nothing relaxed) and taken along the local-state graph (the
// edge found or recorded by lmc.step), so every local state a walk enters
// is confirmed by the walk's prefix and joins the graph, its classes and
// their combinations like any other. The invariants are judged on each
// state a walk reaches (unless WalkUnjudged). Walks take no duplicates
// and respect MaxDepth and the budgets.

// lmcWalkLen bounds the events of one walk (its start's execution
// included).
const lmcWalkLen = 400

// lmcWalkFocus: a focused walk takes one of its node's events first at
// lmcWalkFocus of every lmcWalkFocus+1 steps, so that node goes deep. lmcWalkShare is the walks' share of the work (lmc.walks).
const (
	lmcWalkFocus = 3
	lmcWalkShare = 3
)

// walks runs walks while they have done less than lmcWalkShare times the
// work of the rest of the run (lmc.work; a walk's event counts one), about
// half of the run's time on Amalgam's scenarios. explore calls it between
// the local states it expands, the candidates it checks and the pruned
// states it checks again.
func (e *lmc) walks() {
	if e.o.NoWalk {
		return
	}
	if e.rng == nil {
		e.rng = rand.New(rand.NewPCG(1, 2))
	}
	for e.walkWork < lmcWalkShare*e.work && e.out == nil && !e.late() {
		if _, stop := e.limit(); stop {
			return
		}
		w := e.work
		e.walk()
		e.walkWork += e.work - w
		e.work = w
	}
}

// walkStart picks where a walk starts: the execution of a confirmed
// local state, of two picked at random the one in which node focus takes
// more events, or the initial state.
func (e *lmc) walkStart(focus int32) []lmcMove {
	n := len(e.known)
	k := e.rng.IntN(n + 1)
	if k == n {
		return nil
	}
	events := func(p []lmcMove) int {
		c := 0
		for _, mv := range p {
			c += boolInt(mv.ed.from.i == focus)
		}
		return c
	}
	a, b := e.known[k].wits[0], e.known[e.rng.IntN(n)].wits[0]
	if events(b) > events(a) {
		return b
	}
	return a
}

// lmcWalkEvent is an event enabled in a walk's global state.
type lmcWalkEvent struct {
	l  *lmcLocal
	ev Event
	m  *lmcMsg
}

// walk runs one walk.
func (e *lmc) walk() {
	kind := e.stats.Walks % 3
	e.stats.Walks++
	focus := int32(e.rng.IntN(e.n))
	var start []lmcMove
	if kind != 2 {
		start = e.walkStart(focus)
	}
	q := e.initial()
	path := make([]lmcMove, 0, len(start)+16)
	crashes := 0
	for _, mv := range start {
		mv.saved, mv.added = nil, 0
		q.grow()
		q.do(&mv)
		path = append(path, mv)
		if mv.ed.ev.Kind == Crash {
			crashes++
		}
	}
	s, _, ok := e.replay(events(path, 0))
	if !ok {
		return
	}
	for len(path) < lmcWalkLen && e.out == nil && !e.late() {
		evs := q.enabledEvents(crashes)
		e.rng.Shuffle(len(evs), func(a, b int) { evs[a], evs[b] = evs[b], evs[a] })
		// the focus node's events first (mostly), and within, events that
		// are no edge yet
		if kind != 2 {
			f := kind == 0 && e.rng.IntN(lmcWalkFocus+1) > 0
			rank := func(c lmcWalkEvent) int { return 2*boolInt(f && c.l.i != focus) + boolInt(c.l.edge(c.ev, c.m) != nil) }
			slices.SortStableFunc(evs, func(a, b lmcWalkEvent) int { return rank(a) - rank(b) })
		}
		took := false
		for _, c := range evs {
			ns, err := s.Apply(c.ev)
			var hp *HandlerPanic
			if errors.As(err, &hp) {
				e.report(&Result{Outcome: Violation, Predicate: HandlerPanicPredicate, Explanation: hp.Error(),
					Trace: append(events(path, 1), c.ev), Final: ns})
				e.stats.ByWalk = e.out != nil
				return
			}
			if err != nil {
				continue
			}
			ed := c.l.edge(c.ev, c.m)
			if ed == nil {
				e.walking = true
				ed = e.step(c.l, c.ev, c.m, msgClock(c.m))
				e.walking = false
			}
			if ed == nil { // no step in the local view (a no-op)
				continue
			}
			e.work++
			mv := lmcMove{ed: ed}
			q.grow()
			q.do(&mv)
			path = append(path, mv)
			s = ns
			if c.ev.Kind == Crash {
				crashes++
			}
			e.walked(ed.to, path)
			took = true
			for _, p := range e.preds {
				if e.o.valid != nil || e.o.WalkUnjudged {
					break
				}
				if ok, why := p.p.Check(s); !ok {
					e.report(&Result{Outcome: Violation, Predicate: p.p.Name, Explanation: why, Trace: events(path, 0), Final: s})
					e.stats.ByWalk = e.out != nil
					return
				}
			}
			break
		}
		if !took {
			return
		}
	}
}

// walked confirms l by the walk's path; a pruned l is reached after all.
func (e *lmc) walked(l *lmcLocal, path []lmcMove) {
	e.stats.WalkSteps++
	e.confirm(l, path)
	if l.pruned {
		l.pruned = false
		e.stats.Pruned--
		e.add(l)
	}
}

func msgClock(m *lmcMsg) int32 {
	if m == nil {
		return 0
	}
	return m.clock
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// grow makes room in q's multiset for messages added to I+ since q began.
func (q *lmcSearch) grow() {
	if n := len(q.e.msgs); len(q.count) < n {
		q.count = append(q.count, make([]int32, n-len(q.count))...)
	}
}

// edge is l's recorded step by ev taking m, or nil.
func (l *lmcLocal) edge(ev Event, m *lmcMsg) *lmcEdge {
	for _, ed := range l.outs {
		if ed.m == m && ed.ev.Kind == ev.Kind && ed.ev.Timer == ev.Timer && ed.ev.Env.hash == ev.Env.hash {
			return ed
		}
	}
	return nil
}

// enabledEvents lists the events enabled in q's global state, as the
// search's rules say (no duplicates; a crash within the budget, crashes
// made so far).
func (q *lmcSearch) enabledEvents(crashes int) []lmcWalkEvent {
	e := q.e
	set := e.o.Settings
	var out []lmcWalkEvent
	deep := func(l *lmcLocal, m *lmcMsg) bool {
		return e.o.MaxDepth > 0 && int(max(l.clock, msgClock(m))+1) > e.o.MaxDepth
	}
	for i, l := range q.cur {
		if l.crashed {
			continue
		}
		for _, m := range e.inbox[i] {
			if int(m.id) < len(q.count) && q.count[m.id] > 0 && !deep(l, m) {
				out = append(out, lmcWalkEvent{l, Event{Kind: Deliver, Env: m.env}, m})
			}
		}
		for j := range e.n {
			k := j*e.n + i
			if qu := q.queues[k]; int(q.heads[k]) < len(qu) && !deep(l, qu[q.heads[k]]) {
				m := qu[q.heads[k]]
				out = append(out, lmcWalkEvent{l, Event{Kind: StreamIn, Env: m.env}, m})
			}
		}
		if allows(set.MaxTimerFires, q.fires) && !deep(l, nil) {
			for j, t := range l.timers {
				if timerReady(l.timers, j) && !slices.ContainsFunc(l.timers[:j], func(u pendingTimer) bool { return u.hash == t.hash }) {
					out = append(out, lmcWalkEvent{l, Event{Kind: Fire, Node: e.sys.addrs[i], Timer: t.hash, T: t.T}, nil})
				}
			}
		}
		a := e.sys.addrs[i]
		if allows(set.MaxCrashes, crashes) && !deep(l, nil) &&
			(set.CrashTargets == nil && !slices.Contains(e.sys.clients, i) || slices.Contains(set.CrashTargets, a)) {
			out = append(out, lmcWalkEvent{l, Event{Kind: Crash, Node: a}, nil})
		}
	}
	return out
}
