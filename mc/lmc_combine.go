package mc

import "slices"

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

// lmcClass is the local states of one node with one projected value: up
// to Reps of them, and the combinations with it whose check failed.
type lmcClass struct {
	reps   []*lmcLocal
	failed [][]*lmcClass
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

// added builds the system states the new local state l makes possible:
// if its projected value is new, l with every class of the other nodes
// read; if not, and its class has room, the failed combinations again.
func (lp *lmcPred) added(e *lmc, l *lmcLocal) {
	k := lp.at[l.i]
	if k < 0 {
		return
	}
	key := lp.pr.key(l)
	c := lp.byKey[k][key]
	if c != nil && len(c.reps) >= e.reps || !e.alone(l) {
		return
	}
	if c != nil {
		c.reps = append(c.reps, l)
		for _, combo := range slices.Clone(c.failed) {
			if e.out != nil || e.late() {
				return
			}
			lp.check(e, combo, k, l, false)
		}
		return
	}
	c = &lmcClass{reps: []*lmcLocal{l}}
	lp.byKey[k][key] = c
	lp.classes[k] = append(lp.classes[k], c)
	combo := make([]*lmcClass, len(lp.nodes))
	combo[k] = c
	lp.each(e, combo, 0, k)
}

// each fills combo's positions from pos on (but fixed) with every class
// and checks each combination.
func (lp *lmcPred) each(e *lmc, combo []*lmcClass, pos, fixed int) {
	if e.out != nil || e.late() {
		return
	}
	if pos == len(combo) {
		lp.check(e, slices.Clone(combo), fixed, combo[fixed].reps[0], true)
		return
	}
	if pos == fixed {
		lp.each(e, combo, pos+1, fixed)
		return
	}
	for _, c := range lp.classes[pos] {
		combo[pos] = c
		lp.each(e, combo, pos+1, fixed)
	}
}

// check builds the system state of combo (with l at position k), and if
// the invariant fails there (or it reads more than nodes) queues the
// candidate for the a-posteriori check; fresh says combo was not
// checked before.
func (lp *lmcPred) check(e *lmc, combo []*lmcClass, k int, l *lmcLocal, fresh bool) {
	if fresh {
		e.stats.Built++
		if !lp.pr.Global && e.o.valid == nil {
			s := e.compose(lp, combo)
			if ok, _ := lp.p.Check(s); ok {
				return
			}
		}
		e.stats.Candidates++
	}
	e.pending = append(e.pending, lmcCandidate{lp, combo, k, l, fresh})
}

// lmcCandidate is a combination waiting for its a-posteriori check.
type lmcCandidate struct {
	lp    *lmcPred
	combo []*lmcClass
	k     int
	l     *lmcLocal
	fresh bool
}

// drain checks the waiting candidates (explore calls it once a bound's
// local states are all found, so exploring goes first).
func (e *lmc) drain() {
	for len(e.pending) > 0 && e.out == nil && !e.late() {
		c := e.pending[0]
		e.pending = e.pending[1:]
		c.lp.resolve(e, c.combo, c.k, c.l, c.fresh)
	}
}

// resolve runs the a-posteriori check of a candidate: some combination
// of its classes' local states, with l at k, reachable.
func (lp *lmcPred) resolve(e *lmc, combo []*lmcClass, k int, l *lmcLocal, fresh bool) {
	// Try the combinations of representatives with l at k, a few.
	pick := make([]*lmcLocal, len(combo))
	pick[k] = l
	tries := 0
	var try func(pos int) bool
	try = func(pos int) bool {
		if pos == len(combo) {
			tries++
			return e.confirm(lp, pick)
		}
		reps := combo[pos].reps
		if pos == k { // l first, then the class's other states
			reps = append([]*lmcLocal{l}, slices.DeleteFunc(slices.Clone(reps), func(r *lmcLocal) bool { return r == l })...)
		}
		for _, r := range reps {
			if tries >= e.tries() || e.out != nil || e.late() {
				return false
			}
			pick[pos] = r
			if try(pos + 1) {
				return true
			}
		}
		return false
	}
	if try(0) {
		if !fresh {
			for _, c := range combo {
				c.failed = slices.DeleteFunc(c.failed, func(f []*lmcClass) bool { return slices.Equal(f, combo) })
			}
		}
		return
	}
	if fresh {
		e.stats.Dropped++
		for _, c := range combo {
			c.failed = append(c.failed, combo)
		}
	}
}

const lmcPathTries = 4

// tries bounds the combinations of representatives one candidate's check
// tries.
func (e *lmc) tries() int { return 2 * e.reps }

// alone reports whether some global execution takes l's node along l's
// path (the others running what it needs): only such local states
// represent their class. The answer is kept.
func (e *lmc) alone(l *lmcLocal) bool {
	if l.parent == nil {
		return true
	}
	if l.alone == 0 {
		l.alone = 2
		e.stats.Checks++
		if _, final, _ := e.replay(map[int][]Event{int(l.i): l.path()}); final != nil {
			l.alone = 1
			e.stats.Passed++
		}
	}
	return l.alone == 1
}

// compose is the system state of combo: each node read by lp in its
// class's first local state, the others initial, nothing in flight.
func (e *lmc) compose(lp *lmcPred, combo []*lmcClass) *State {
	s := e.init.copyState()
	s.nodes, s.crashed = slices.Clone(s.nodes), slices.Clone(s.crashed)
	s.net, s.streams, s.timers, s.returns = nil, nil, make([][]pendingTimer, e.n), nil
	for k, c := range combo {
		i := lp.nodes[k]
		s.nodes[i], s.crashed[i] = c.reps[0].in, c.reps[0].crashed
	}
	return s
}

// confirm runs the a-posteriori check for the local states pick (one per
// node lp reads): a global execution in which each runs exactly its
// path. If there is one, the invariants are checked on the state it
// reaches; a failure there is the run's violation. It reports whether
// the execution exists.
func (e *lmc) confirm(lp *lmcPred, pick []*lmcLocal) bool {
	// Each local state on its first path, then on its other paths: up
	// to lmcPathTries combinations.
	paths := make([][][]Event, len(pick))
	for k, l := range pick {
		paths[k] = l.paths(lmcPathTries)
	}
	var trace []Event
	var final *State
	var err error
	choice := make([]int, len(pick))
	for n := 0; n < lmcPathTries && final == nil; n++ {
		fixed := map[int][]Event{}
		for k, l := range pick {
			fixed[int(l.i)] = paths[k][choice[k]]
		}
		e.stats.Checks++
		trace, final, err = e.replay(fixed)
		k := 0 // next choice, as an odometer
		for ; k < len(choice); k++ {
			if choice[k]++; choice[k] < len(paths[k]) {
				break
			}
			choice[k] = 0
		}
		if k == len(choice) {
			break
		}
	}
	if final == nil {
		return false
	}
	e.stats.Passed++
	if err != nil {
		e.out = &Result{Outcome: Violation, Predicate: HandlerPanicPredicate, Explanation: err.Error(), Trace: trace, Final: final}
		return true
	}
	if e.o.valid != nil {
		e.o.valid(final)
		return true
	}
	for _, p := range e.preds {
		if ok, why := p.p.Check(final); !ok {
			e.out = &Result{Outcome: Violation, Predicate: p.p.Name, Explanation: why, Trace: trace, Final: final}
			return true
		}
	}
	return true
}

// panicked: a handler panicked in local state l on ev. It is reported if
// a global execution reaches it.
func (e *lmc) panicked(l *lmcLocal, ev Event, _ error) {
	e.stats.Candidates++
	e.stats.Checks++
	trace, final, err := e.replay(map[int][]Event{int(l.i): append(l.path(), ev)})
	if final != nil && err != nil {
		e.stats.Passed++
		e.out = &Result{Outcome: Violation, Predicate: HandlerPanicPredicate, Explanation: err.Error(), Trace: trace, Final: final}
		return
	}
	e.stats.Dropped++
}
