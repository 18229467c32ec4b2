package mc

import (
	"errors"
	"slices"
)

// lmcPred is one invariant of an LMC run: the nodes it reads and, per
// node, the classes of local states with one projected value.
type lmcPred struct {
	p       Predicate
	pr      *Projection
	nodes   []int // node indices read
	at      []int // node index -> position in nodes, or -1
	classes [][]*lmcClass
	byKey   []map[uint64]*lmcClass
}

// lmcClass is the reached local states of one node with one projected
// value; stamp is lmc.version when it last gained one.
type lmcClass struct {
	members []*lmcLocal
	stamp   int
}

// lmcCandidate is a combination of classes (one per node read) waiting
// for, or having failed, its a-posteriori check; foot is what its last
// check read.
type lmcCandidate struct {
	lp    *lmcPred
	combo []*lmcClass
	foot  *lmcFoot
}

// stale reports whether c's last check may have a different answer now.
func (c *lmcCandidate) stale() bool {
	if c.foot == nil || c.foot.stale() {
		return true
	}
	for _, cl := range c.combo {
		if cl.stamp > c.foot.at {
			return true
		}
	}
	return false
}

func (e *lmc) addPred(p Predicate) {
	pr := p.Reads
	if pr == nil {
		pr = &allNodes
		e.stats.Unprojected = append(e.stats.Unprojected, p.Name)
	}
	lp := &lmcPred{p: p, pr: pr, at: make([]int, e.n)}
	for i, a := range e.sys.addrs {
		lp.at[i] = -1
		reads := slices.Contains(e.sys.clients, i)
		if pr.Reads != nil {
			reads = pr.Reads(a, e.init.nodes[i].nd)
		}
		if reads {
			lp.at[i] = len(lp.nodes)
			lp.nodes = append(lp.nodes, i)
			lp.classes = append(lp.classes, nil)
			lp.byKey = append(lp.byKey, map[uint64]*lmcClass{})
		}
	}
	e.preds = append(e.preds, lp)
}

// added puts the newly reached local state l in its class. A new class
// makes new system states possible: one per combination with the classes
// the other nodes read have now; drain builds them.
func (lp *lmcPred) added(e *lmc, l *lmcLocal) {
	k := lp.at[l.i]
	if k < 0 {
		return
	}
	key := lp.pr.key(l)
	if c := lp.byKey[k][key]; c != nil {
		c.members, c.stamp = append(c.members, l), e.version
		return // failed combinations with c are checked again (drain)
	}
	c := &lmcClass{members: []*lmcLocal{l}}
	lp.byKey[k][key] = c
	lp.classes[k] = append(lp.classes[k], c)
	b := &lmcBuild{lp: lp, k: k, c: c, n: make([]int, len(lp.nodes)), at: make([]int, len(lp.nodes))}
	for pos := range b.n {
		b.n[pos] = len(lp.classes[pos])
	}
	b.n[k] = 1
	e.builds = append(e.builds, b)
}

// lmcBuild enumerates the combinations of a new class c (at position k)
// with the first n[pos] classes of each other position, at[] being the
// next one.
type lmcBuild struct {
	lp    *lmcPred
	k     int
	c     *lmcClass
	n, at []int
}

// left counts the combinations not built yet.
func (b *lmcBuild) left() int {
	n, done := 1, 0
	for pos := range b.n {
		n *= b.n[pos]
		done = done*b.n[pos] + b.at[pos]
	}
	return n - done
}

// step builds the next combination; it reports false when none is left.
func (b *lmcBuild) step(e *lmc) bool {
	for _, n := range b.n {
		if n == 0 {
			return false
		}
	}
	if b.at[0] == b.n[0] {
		return false
	}
	combo := make([]*lmcClass, len(b.n))
	for pos := range combo {
		combo[pos] = b.lp.classes[pos][b.at[pos]]
	}
	combo[b.k] = b.c
	b.lp.build(e, combo)
	e.work++
	for pos := len(b.at) - 1; pos >= 0; pos-- { // next, as an odometer
		if b.at[pos]++; b.at[pos] < b.n[pos] || pos == 0 {
			break
		}
		b.at[pos] = 0
	}
	return true
}

// build makes the system state of combo and, if the invariant fails
// there (or it reads more than the nodes), queues the candidate for the
// a-posteriori check.
func (lp *lmcPred) build(e *lmc, combo []*lmcClass) {
	e.stats.Built++
	if !lp.pr.Global && e.o.valid == nil {
		if ok, _ := lp.p.Check(e.compose(lp, combo)); ok {
			return
		}
	}
	e.stats.Candidates++
	e.pending = append(e.pending, &lmcCandidate{lp: lp, combo: combo})
}

// drain builds the system states new classes make possible and checks
// the waiting candidates (each as soon as it is built), then again those
// that failed before if the graph has grown since (explore calls it once a bound's local states are
// all found, so exploring goes first). Unless final, it stops after as
// much work as the bound's exploration did (lmc.work); what is left
// waits.
func (e *lmc) drain(final bool) {
	if !final {
		e.yield = e.work + max(e.work-e.boundWork, 10000)
		defer func() { e.yield = 0 }()
	}
	stop := func() bool { return e.out != nil || e.late() || e.yielded() }
	for (len(e.pending) > 0 || len(e.builds) > 0) && !stop() {
		switch {
		case len(e.pending) > 0: // what is built is checked first
			if e.walks(); e.out != nil {
				return
			}
			c := e.pending[0]
			e.pending = e.pending[1:]
			e.resolve(c)
		case !e.builds[0].step(e):
			e.builds = e.builds[1:]
		}
	}
	failed := e.failed
	e.failed = nil
	for k, c := range failed {
		if stop() {
			e.failed = append(e.failed, failed[k:]...)
			return
		}
		if !c.stale() {
			e.failed = append(e.failed, c)
			continue
		}
		e.resolve(c)
	}
}

// resolve runs candidate c's a-posteriori check: a global execution that
// takes each node read to a local state of its class (the others doing
// what the nodes read need) and ends where the invariant fails (any
// state, when every confirmed state goes to LMCOptions.valid). Found, it
// is the run's violation. A Global invariant is judged on the first such
// execution found: the combination does not say which to look for.
func (e *lmc) resolve(c *lmcCandidate) {
	target := make([][]*lmcLocal, e.n)
	for k, cl := range c.combo {
		target[c.lp.nodes[k]] = cl.members
	}
	var why string
	fails := false
	goal := func(s *State) bool {
		if e.o.valid != nil {
			return true
		}
		ok, w := c.lp.p.Check(s)
		why, fails = w, !ok
		return fails || c.lp.pr.Global
	}
	q := &lmcSearch{}
	if q.trace, q.final = e.mergeCombo(c, goal); q.final == nil {
		q = e.search(target, nil, goal, e.o.MaxSearch)
	}
	switch {
	case q.final != nil && e.o.valid != nil:
		e.o.valid(q.final)
	case q.final != nil && fails:
		e.report(&Result{Outcome: Violation, Predicate: c.lp.p.Name, Explanation: why, Trace: q.trace, Final: q.final})
	case q.final != nil:
	case q.late:
		e.pending = append(e.pending, c)
	default:
		c.foot = &q.foot
		e.failed = append(e.failed, c)
	}
}

// reaches decides whether some global execution takes l's node to l (the
// others running what it needs): only such local states are expanded.
// The causal merge answers first; then a search, of at most
// lmcQuickSearch global states if quick (more is left for unprune: not
// decided), else of lmcReachSearch, whose giving up counts as reaching l
// (Unsure). A search stopped by MaxTime or drain's share decides nothing.
func (e *lmc) reaches(l *lmcLocal, quick bool) (yes, decided bool) {
	l.foot = nil
	if l.parent == nil {
		l.confirmed = true
		return true, true
	}
	if p := e.mergeInto(l); p != nil {
		e.stats.Merged++
		e.confirm(l, p)
		return true, true
	}
	target := make([][]*lmcLocal, e.n)
	target[l.i] = []*lmcLocal{l}
	budget := min(e.o.MaxSearch, lmcReachSearch)
	if quick {
		if lmcQuickSearch == 0 {
			return false, false
		}
		budget = min(budget, lmcQuickSearch)
	}
	q := e.search(target, nil, nil, budget)
	switch {
	case q.final != nil:
		if !l.crashed {
			e.confirm(l, slices.Clone(q.path))
		}
		return true, true
	case q.late || quick && q.gaveUp:
		return false, false
	case q.gaveUp:
		e.stats.Unsure++
		return true, true // kept: the graph may grow too much, but misses nothing
	}
	l.foot = &q.foot
	return false, true
}

// lmcReachSearch bounds the global states a pruning check visits, and
// lmcQuickSearch those of its first try (exploring goes first).
const (
	lmcReachSearch = 1 << 11
	lmcQuickSearch = 1 << 8
)

// compose is the system state of combo: each node read by lp in its
// class's first local state, the others initial, nothing in flight.
func (e *lmc) compose(lp *lmcPred, combo []*lmcClass) *State {
	s := e.init.copyState()
	s.nodes, s.crashed = slices.Clone(s.nodes), slices.Clone(s.crashed)
	s.net, s.streams, s.timers, s.returns = nil, nil, make([][]pendingTimer, e.n), nil
	for k, c := range combo {
		i := lp.nodes[k]
		s.nodes[i], s.crashed[i] = c.members[0].in, c.members[0].crashed
	}
	return s
}

// panicked: a handler panicked in local state l on ev (taking m). It is
// reported if a global execution reaches l with ev enabled.
func (e *lmc) panicked(l *lmcLocal, ev Event, m *lmcMsg) {
	e.stats.Candidates++
	p := &lmcLocal{i: l.i, virtual: true}
	ed := &lmcEdge{from: l, to: p, ev: ev, m: m}
	p.ins = []*lmcEdge{ed}
	target := make([][]*lmcLocal, e.n)
	target[l.i] = []*lmcLocal{p}
	if q := e.search(target, ed, nil, e.o.MaxSearch); q.err != nil {
		e.report(&Result{Outcome: Violation, Predicate: HandlerPanicPredicate, Explanation: q.err.Error(), Trace: q.trace, Final: q.final})
		return
	}
	e.stats.Dropped++
}

// report makes r the run's violation if its trace, replayed again from
// the initial state with every handler run afresh (no handler-result
// cache), still ends in the violation; r's final state becomes that
// replay's. A trace that does not (LMCStats.Corrupt) means a handler
// changed memory a clone shares, which node.Node's contract forbids: a
// cached result or a kept local state then no longer says what its
// handler does.
func (e *lmc) report(r *Result) {
	s := e.init
	for k, ev := range r.Trace {
		next, err := s.apply(ev, false, nil, false)
		var hp *HandlerPanic
		if errors.As(err, &hp) && k == len(r.Trace)-1 && r.Predicate == HandlerPanicPredicate {
			r.Final, e.out = next, r
			return
		}
		if err != nil {
			e.stats.Corrupt++
			return
		}
		s = next
	}
	for _, p := range e.preds {
		if p.p.Name == r.Predicate {
			if ok, why := p.p.Check(s); !ok {
				r.Explanation, r.Final, e.out = why, s, r
				return
			}
		}
	}
	e.stats.Corrupt++
}
