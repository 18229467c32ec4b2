package mc

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Strategy is how a search walks the state graph.
type Strategy string

// The strategies. Guided search is a chain of phases (see Guided), each of
// which runs one of the others.
const (
	BFS    Strategy = "bfs"    // breadth-first, level by level: shortest counterexamples
	DFS    Strategy = "dfs"    // depth-first (depth-bounded with MaxDepth)
	Random Strategy = "random" // seeded random walks
	Guided Strategy = "guided" // a scenario's plan of punctuated phases
)

// Outcome is how a search ended.
type Outcome string

// The outcomes.
const (
	Exhausted  Outcome = "exhausted"   // every reachable state (within MaxDepth) was explored
	TimeLimit  Outcome = "time_limit"  // MaxTime ran out
	StateLimit Outcome = "state_limit" // MaxStates distinct states were found
	Violation  Outcome = "violation"   // an invariant failed (or a handler panicked)
	GoalFound  Outcome = "goal_found"  // a goal holds
	WalksDone  Outcome = "walks_done"  // random search: every walk ran
)

// Checks are the self-checks a search can run on every step (thesis
// 4.3.1.2). They cost several times the search itself.
type Checks struct {
	Determinism bool // apply every event twice and compare fingerprints
	CloneHash   bool // clone the changed node and compare hashes
	Idempotence bool // redeliver every message and report handlers that change state again
}

// Options configure one search.
type Options struct {
	Strategy   Strategy
	Settings   Settings
	Invariants []Predicate // must hold in every reachable state
	Goals      []Predicate // stop at the first state where one holds
	Prunes     []Predicate // states where one holds are checked but not expanded
	MaxDepth   int         // 0: no bound (random: walk length, default 200)
	MaxStates  int         // 0: no bound
	MaxTime    time.Duration
	Workers    int    // BFS only; 0 means 1
	Seed       uint64 // random walks
	Walks      int    // random walks: number of walks (0: until a limit)
	Checks     Checks
	// SleepSets prunes transitions with sleep sets (BFS without Prunes
	// only; see sleep.go): every reachable state is still found, through
	// fewer transitions. A state some sleep set made wait may be reported
	// deeper than its shortest path.
	SleepSets bool
	// Symmetry keys the visited set by the fingerprint of each state's
	// representative under the node groups the initial state declares
	// interchangeable (State.Symmetric; symmetry.go).
	Symmetry bool
	// Consequence explores a node's local actions (timer firings,
	// crashes, restarts) only in the first state where the node's local
	// state is seen (consequence prediction, consequence.go). BFS only.
	Consequence bool
	// Filter, if set, removes from every state's events those it returns
	// false for (an execution-steering filter: a message it refuses is
	// never delivered). BFS and random walks only.
	Filter func(Event) bool
	// FilterAt is Filter given the state the event happens in (a filter
	// that refuses a step by its result).
	FilterAt func(*State, Event) bool
	// NoMemo runs every handler afresh instead of reusing the result of
	// the same node state handling the same event (tests compare both).
	NoMemo bool
	// NodeDepth makes BFS count, on each path it explores, the events
	// each node handles (Result.NodeDepth).
	NodeDepth bool
	// Progress, if set, gets a line "states=... depth=... states/s=..."
	// every ProgressEvery (default 1s) and one at the end.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Result is what a search found.
type Result struct {
	Outcome Outcome
	States  int // distinct states found (fingerprints)
	// Transitions counts the steps BFS and DFS took (successor states
	// built, seen before or not; no-ops skipped are none).
	Transitions int
	MaxDepth    int // deepest level reached
	// NodeDepth is the most events one node handled on one path BFS
	// explored (with Options.NodeDepth).
	NodeDepth   int
	Elapsed     time.Duration
	Predicate   string  // the failing invariant or the goal that holds
	Explanation string  // its explanation
	Trace       []Event // from the initial state to the violating or goal state
	Final       *State  // the state the trace leads to
	// Idempotence lists message types whose handler changed state when
	// the message was delivered a second time (Checks.Idempotence).
	Idempotence []string
}

// StatesPerSecond is the search's rate of distinct states.
func (r *Result) StatesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.States) / r.Elapsed.Seconds()
}

// HandlerPanicPredicate is the predicate name reported when a handler panics.
const HandlerPanicPredicate = "no handler panics"

// tnode is a node of the search tree: enough to rebuild a trace. The
// event is kept compact (kind, node index, message or timer hash) and
// resolved again, by replaying from the search's initial state, when a
// trace is wanted: the search keeps a tnode per state reached.
type tnode struct {
	parent *tnode
	hash   uint64 // envelope hash, or timer hash for Fire
	node   int32  // node index for Fire, Crash and Restart
	kind   EventKind
	depth  int32
}

func newTnode(parent *tnode, s *State, e Event) *tnode {
	t := &tnode{parent: parent, kind: e.Kind, depth: parent.depth + 1, hash: e.Env.hash, node: e.Env.to - 1}
	switch e.Kind {
	case Fire:
		t.node, t.hash = int32(s.sys.index[e.Node]), e.Timer
	case Crash:
		t.node, t.hash = int32(s.sys.index[e.Node]), e.earlyKey() // 0 but for SendsBeforeDurableOn's crashes
	case Restart, Heal, Sync:
		t.node, t.hash = int32(s.sys.index[e.Node]), 0
	case Partition:
		t.node, t.hash = int32(s.sys.index[e.Node]), e.Timer
	}
	return t
}

// trace rebuilds the events from init to t.
func (t *tnode) trace(init *State) []Event {
	var path []*tnode
	for ; t != nil && t.parent != nil; t = t.parent {
		path = append(path, t)
	}
	slices.Reverse(path)
	all := Settings{MaxDrops: Unlimited, MaxDuplicates: Unlimited, MaxCrashes: Unlimited, MaxTimerFires: Unlimited,
		MaxRestarts: Unlimited, CrashTargets: init.sys.addrs}
	out := make([]Event, 0, len(path))
	s := init
	for i, n := range path {
		var e Event
		if n.kind == Partition {
			e = Event{Kind: Partition, Node: s.sys.addrs[n.node], Timer: n.hash}
		} else {
			evs := s.Events(all)
			j := slices.IndexFunc(evs, func(e Event) bool { return n.matches(s, e) })
			if j < 0 {
				panic(fmt.Sprintf("mc: event %d of a search path is not possible on replay", i+1))
			}
			e = evs[j]
		}
		out = append(out, e)
		next, err := s.Apply(e)
		if err != nil {
			break // a handler panic ends the path
		}
		s = next
	}
	return out
}

// handler is the node that handles t's event, or -1.
func (t *tnode) handler() int32 {
	switch t.kind {
	case Deliver, Duplicate, StreamIn, Fire, Crash, Restart:
		return t.node
	}
	return -1
}

// nodeEvents is how many events t's handler handles on t's path.
func (t *tnode) nodeEvents() int {
	i, n := t.handler(), 0
	for ; i >= 0 && t.parent != nil; t = t.parent {
		if t.handler() == i {
			n++
		}
	}
	return n
}

func (t *tnode) matches(s *State, e Event) bool {
	if e.Kind != t.kind {
		return false
	}
	switch e.Kind {
	case Fire:
		return e.Timer == t.hash && s.sys.index[e.Node] == int(t.node)
	case Crash:
		return s.sys.index[e.Node] == int(t.node) && e.earlyKey() == t.hash
	case Restart, Heal, Sync:
		return s.sys.index[e.Node] == int(t.node)
	}
	return e.Env.hash == t.hash
}

// visited is a sharded set of fingerprints with the smallest depth each
// was reached at.
type visited struct {
	shards [256]struct {
		sync.Mutex
		m map[uint64]int32
		_ [48]byte // 64 bytes a shard, a cache line
	}
	n atomic.Int64
}

func newVisited() *visited {
	v := &visited{}
	for i := range v.shards {
		v.shards[i].m = map[uint64]int32{}
	}
	return v
}

// add records fp at depth d; it reports whether fp must be expanded: it is
// new (fresh) or was only seen deeper before.
func (v *visited) add(fp uint64, d int) (expand, fresh bool) {
	sh := &v.shards[fp>>56]
	sh.Lock()
	old, seen := sh.m[fp]
	if !seen || int32(d) < old {
		sh.m[fp] = int32(d)
	}
	sh.Unlock()
	if !seen {
		v.n.Add(1)
	}
	return !seen || int32(d) < old, !seen
}

// searcher is the shared state of one search.
type searcher struct {
	opt    Options
	init   *State
	vis    *visited
	start  time.Time
	depth  atomic.Int64
	ndepth atomic.Int64 // Options.NodeDepth
	trans  atomic.Int64
	sleep  *sleepStore // Options.SleepSets
	stop   atomic.Bool
	mu     sync.Mutex
	result *Result
	idem   map[string]bool
	cp     *consequence // nil unless Options.Consequence
}

// Search explores the state graph from init with opt.Strategy (BFS when
// empty) and reports the first violation, the first goal, or how it ended.
func Search(init *State, opt Options) *Result {
	defer raiseGC()()
	if opt.Workers < 1 {
		opt.Workers = 1
	}
	if opt.ProgressEvery <= 0 {
		opt.ProgressEvery = time.Second
	}
	sr := &searcher{opt: opt, init: init, vis: newVisited(), start: time.Now(), idem: map[string]bool{}}
	if opt.Consequence {
		sr.cp = newConsequence()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if opt.Progress != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(opt.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					sr.progress()
				}
			}
		}()
	}
	var out Outcome
	switch opt.Strategy {
	case DFS:
		out = sr.dfs(init)
	case Random:
		out = sr.random(init)
	case BFS, "":
		out = sr.bfs(init)
	default:
		panic(fmt.Sprintf("mc: Search: unknown strategy %q", opt.Strategy))
	}
	close(done)
	wg.Wait()
	r := sr.result
	if r == nil {
		r = &Result{Outcome: out}
	}
	r.States = int(sr.vis.n.Load())
	r.Transitions = int(sr.trans.Load())
	r.MaxDepth, r.NodeDepth = int(sr.depth.Load()), int(sr.ndepth.Load())
	r.Elapsed = time.Since(sr.start)
	for k := range sr.idem {
		r.Idempotence = append(r.Idempotence, k)
	}
	if opt.Progress != nil {
		sr.progress()
	}
	return r
}

// key is what the visited set holds for s.
func (sr *searcher) key(s *State) uint64 {
	if sr.opt.Symmetry && s.sys.sym != nil {
		return s.symFingerprint()
	}
	return s.fp
}

func (sr *searcher) progress() {
	el := time.Since(sr.start)
	n := sr.vis.n.Load()
	fmt.Fprintf(sr.opt.Progress, "mc: states=%d depth=%d elapsed=%.1fs states/s=%.0f\n",
		n, sr.depth.Load(), el.Seconds(), float64(n)/max(el.Seconds(), 1e-9))
}

func (sr *searcher) noteDepth(d int) { noteMax(&sr.depth, d) }

// noteMax raises x to d.
func noteMax(x *atomic.Int64, d int) {
	for {
		cur := x.Load()
		if int64(d) <= cur || x.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// limit reports a reached time or state limit.
func (sr *searcher) limit() (Outcome, bool) {
	if sr.opt.MaxTime > 0 && time.Since(sr.start) > sr.opt.MaxTime {
		return TimeLimit, true
	}
	if sr.opt.MaxStates > 0 && sr.vis.n.Load() >= int64(sr.opt.MaxStates) {
		return StateLimit, true
	}
	return "", false
}

// allowed removes from evs, s's events, those Filter and FilterAt refuse.
func (sr *searcher) allowed(s *State, evs []Event) []Event {
	if sr.opt.Filter != nil {
		evs = slices.DeleteFunc(evs, func(e Event) bool { return !sr.opt.Filter(e) })
	}
	if sr.opt.FilterAt != nil {
		evs = slices.DeleteFunc(evs, func(e Event) bool { return !sr.opt.FilterAt(s, e) })
	}
	return evs
}

// found records a violation or goal; the first one wins.
func (sr *searcher) found(out Outcome, pred, why string, t *tnode, s *State) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.result == nil {
		sr.result = &Result{Outcome: out, Predicate: pred, Explanation: why, Trace: t.trace(sr.init), Final: s}
	}
	sr.stop.Store(true)
}

// examine checks a newly reached state: invariants, then goals. It reports
// whether the search must stop.
func (sr *searcher) examine(s *State, t *tnode) bool {
	for _, p := range sr.opt.Invariants {
		if ok, why := p.Check(s); !ok {
			sr.found(Violation, p.Name, why, t, s)
			return true
		}
	}
	for _, p := range sr.opt.Goals {
		if ok, why := p.Check(s); ok {
			sr.found(GoalFound, p.Name, why, t, s)
			return true
		}
	}
	return false
}

func (sr *searcher) pruned(s *State) bool {
	for _, p := range sr.opt.Prunes {
		if ok, _ := p.Check(s); ok {
			return true
		}
	}
	return false
}

// step applies e to s, running the self-checks; a handler panic is
// recorded as a violation (with the trace through parent) and yields nil
// and stop. An event Settings.SkipNoOps makes no step yields nil only.
// With sc, the new state is built in sc (see scratch).
func (sr *searcher) step(s *State, e Event, parent *tnode, sc *scratch) (_ *State, stop bool) {
	var next *State
	var err error
	memo := !sr.opt.NoMemo && !s.sys.noMemo
	next, err = s.apply(e, memo, sc, sr.opt.Settings.SkipNoOps)
	if err == errNoOp {
		return nil, false
	}
	if err != nil {
		var hp *HandlerPanic
		if errors.As(err, &hp) {
			if sc != nil {
				next = sc.freeze()
			}
			sr.found(Violation, HandlerPanicPredicate, hp.Error(), newTnode(parent, s, e), next)
			return nil, true
		}
		panic(fmt.Sprintf("mc: event %v from its own Events: %v", e, err))
	}
	if c := sr.opt.Checks; c.Determinism || c.CloneHash || c.Idempotence {
		if why := sr.selfCheck(s, e, next); why != "" {
			if sc != nil {
				next = sc.freeze()
			}
			sr.found(Violation, "self-check", why, newTnode(parent, s, e), next)
			return nil, true
		}
	}
	return next, false
}

func (sr *searcher) selfCheck(s *State, e Event, next *State) string {
	c := sr.opt.Checks
	if c.Determinism {
		// Apply may reuse a handler result computed in another state with
		// the same node; this runs the handler afresh.
		again, err := s.apply(e, false, nil, false)
		if err != nil || again.fp != next.fp {
			return fmt.Sprintf("determinism: %v applied twice to one state gives different states", e)
		}
	}
	if c.CloneHash {
		if err := next.checkSums(); err != nil {
			return err.Error()
		}
	}
	i, ok := next.sys.index[e.Target()]
	if c.CloneHash && ok {
		cl := next.sys.clone(next.nodes[i].nd, next.nodes[i].h)
		if h := cl.Hash(); h != next.nodes[i].h {
			return fmt.Sprintf("clone/hash: a clone of %s hashes %016x, the original %016x", e.Target(), h, next.nodes[i].h)
		}
	}
	if c.Idempotence && ok && (e.Kind == Deliver || e.Kind == StreamIn) && !next.crashed[i] {
		cl := next.sys.clone(next.nodes[i].nd, next.nodes[i].h)
		func() {
			defer func() { _ = recover() }()
			cl.Handle(&simContext{sys: next.sys, self: e.Env.To}, e.Env.From, e.Env.Msg)
		}()
		if cl.Hash() != next.nodes[i].h {
			sr.mu.Lock()
			sr.idem[fmt.Sprintf("%T at %s", e.Env.Msg, e.Env.To)] = true
			sr.mu.Unlock()
		}
	}
	return ""
}

type item struct {
	s *State
	t *tnode
}

// begin marks init visited at depth 0 and examines it; stop reports
// that the search ends there (a violation or goal in the initial state).
func (sr *searcher) begin(init *State) (root *tnode, stop bool) {
	root = &tnode{}
	sr.vis.add(sr.key(init), 0)
	return root, sr.examine(init, root)
}

// bfs is level-synchronous: workers expand one level's states in parallel
// and the next level starts when all are done, so the first violation
// found is at the smallest depth (a shortest counterexample).
func (sr *searcher) bfs(init *State) Outcome {
	root, stop := sr.begin(init)
	if stop {
		return ""
	}
	if sr.opt.SleepSets && len(sr.opt.Prunes) == 0 {
		sr.sleep = newSleepStore()
		sr.sleep.arrive(sr.key(init), 0, nil)
	}
	level := []item{{init, root}}
	for depth := 0; len(level) > 0; depth++ {
		sr.noteDepth(depth)
		if sr.opt.MaxDepth > 0 && depth >= sr.opt.MaxDepth {
			return Exhausted
		}
		var next [][]item
		var limitHit atomic.Value
		var idx atomic.Int64
		// Chunks of up to 32 states, smaller in small levels so that no
		// worker waits long at the level's end for another's last chunk.
		w := min(sr.opt.Workers, 1+len(level)/32)
		chunk := max(1, min(32, len(level)/(4*w)))
		next = make([][]item, w)
		var wg sync.WaitGroup
		for k := 0; k < w; k++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				var out []item
				var evs []Event
				var done []sleepEv
				var trans int64
				defer func() { sr.trans.Add(trans) }()
				sc := &scratch{}
				for !sr.stop.Load() {
					lo := int(idx.Add(int64(chunk))) - chunk
					if lo >= len(level) {
						break
					}
					if o, hit := sr.limit(); hit {
						limitHit.Store(o)
						sr.stop.Store(true)
						break
					}
					for _, it := range level[lo:min(lo+chunk, len(level))] {
						if sr.pruned(it.s) {
							continue
						}
						evs = it.s.appendEvents(evs[:0], sr.opt.Settings)
						if sr.cp != nil {
							evs = sr.cp.filter(it.s, evs)
						}
						evs = sr.allowed(it.s, evs)
						var z []sleepEv
						if sr.sleep != nil {
							z, done = sr.sleep.get(sr.key(it.s)), done[:0]
						}
						for _, e := range evs {
							var ev sleepEv
							if sr.sleep != nil {
								if ev = it.s.sleepEvent(e, sr.opt.Settings); sleeps(z, ev.id) {
									continue
								}
							}
							ns, stop := sr.step(it.s, e, it.t, sc)
							if stop {
								return
							}
							if ns == nil {
								continue
							}
							trans++
							k := sr.key(ns)
							_, fresh := sr.vis.add(k, depth+1)
							if sr.sleep != nil {
								again := sr.sleep.arrive(k, depth+1, childSleep(z, done, ev))
								done = append(done, ev)
								if !fresh && again {
									out = append(out, item{sc.freeze(), newTnode(it.t, it.s, e)})
								}
							}
							if !fresh {
								continue
							}
							ns = sc.freeze()
							nt := newTnode(it.t, it.s, e)
							if sr.opt.NodeDepth {
								noteMax(&sr.ndepth, nt.nodeEvents())
							}
							if sr.examine(ns, nt) {
								return
							}
							out = append(out, item{ns, nt})
						}
					}
				}
				next[k] = out
			}(k)
		}
		wg.Wait()
		if sr.result != nil {
			return ""
		}
		if o, ok := limitHit.Load().(Outcome); ok {
			return o
		}
		level = level[:0:0]
		for _, o := range next {
			level = append(level, o...)
		}
		if len(level) > 0 {
			sr.noteDepth(depth + 1)
		}
	}
	return Exhausted
}

// dfs explores depth-first. A state reached again at a smaller depth than
// before is expanded again, so that with MaxDepth it finds exactly the
// states BFS finds with the same bound.
func (sr *searcher) dfs(init *State) Outcome {
	root, stop := sr.begin(init)
	if stop {
		return ""
	}
	type frame struct {
		s   *State
		t   *tnode
		evs []Event
	}
	stack := []frame{{init, root, init.Events(sr.opt.Settings)}}
	if sr.pruned(init) {
		return Exhausted
	}
	n := 0
	sc := &scratch{}
	for len(stack) > 0 {
		if n++; n%256 == 0 {
			if o, hit := sr.limit(); hit {
				return o
			}
		}
		top := &stack[len(stack)-1]
		if len(top.evs) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		e := top.evs[0]
		top.evs = top.evs[1:]
		ns, stop := sr.step(top.s, e, top.t, sc)
		if stop {
			return ""
		}
		if ns == nil {
			continue
		}
		sr.trans.Add(1)
		expand, fresh := sr.vis.add(sr.key(ns), int(top.t.depth)+1)
		if !expand {
			continue
		}
		ns = sc.freeze()
		nt := newTnode(top.t, top.s, e)
		sr.noteDepth(int(nt.depth))
		if fresh && sr.examine(ns, nt) {
			return ""
		}
		if sr.pruned(ns) || sr.opt.MaxDepth > 0 && int(nt.depth) >= sr.opt.MaxDepth {
			continue
		}
		stack = append(stack, frame{ns, nt, ns.Events(sr.opt.Settings)})
	}
	return Exhausted
}

// random runs seeded random walks of at most MaxDepth steps (default 200)
// from init, each with its own seed derived from Seed.
func (sr *searcher) random(init *State) Outcome {
	root, stop := sr.begin(init)
	if stop {
		return ""
	}
	depth := sr.opt.MaxDepth
	if depth <= 0 {
		depth = 200
	}
	var walks atomic.Int64
	var out atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < sr.opt.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for !sr.stop.Load() {
				k := walks.Add(1) - 1
				if sr.opt.Walks > 0 && k >= int64(sr.opt.Walks) {
					out.CompareAndSwap(nil, WalksDone)
					return
				}
				if o, hit := sr.limit(); hit {
					out.CompareAndSwap(nil, o)
					sr.stop.Store(true)
					return
				}
				rng := rand.New(rand.NewPCG(sr.opt.Seed, uint64(k)))
				s, t := init, root
				for d := 0; d < depth && !sr.pruned(s); d++ {
					evs := sr.allowed(s, s.Events(sr.opt.Settings))
					var e Event
					var ns *State
					for len(evs) > 0 && ns == nil {
						k := rng.IntN(len(evs))
						e = evs[k]
						var stop bool
						if ns, stop = sr.step(s, e, t, nil); stop {
							return
						}
						evs = slices.Delete(evs, k, k+1) // a no-op: choose again
					}
					if ns == nil {
						break
					}
					nt := newTnode(t, s, e)
					sr.noteDepth(int(nt.depth))
					if _, fresh := sr.vis.add(sr.key(ns), int(nt.depth)); fresh && sr.examine(ns, nt) {
						return
					}
					s, t = ns, nt
				}
			}
		}(w)
	}
	wg.Wait()
	if o, ok := out.Load().(Outcome); ok && sr.result == nil {
		return o
	}
	return ""
}

// Phase is one search of a punctuated chain (thesis 4.3.3.2): every phase
// but the last must reach one of its Goals; the next phase starts from the
// state found.
type Phase struct {
	Name string
	Options
}

// RunGuided runs the phases in order from init. The result is the last
// phase's, with the states of all phases added up and the traces joined;
// an earlier phase that ends without reaching its goal ends the chain with
// its own outcome. Progress, MaxTime and Workers of opt apply to every
// phase that sets none itself.
func RunGuided(init *State, phases []Phase, common Options) *Result {
	start := time.Now()
	total := &Result{}
	var trace []Event
	s := init
	for i, ph := range phases {
		o := ph.Options
		if o.Progress == nil {
			o.Progress, o.ProgressEvery = common.Progress, common.ProgressEvery
		}
		if o.Workers == 0 {
			o.Workers = common.Workers
		}
		if common.MaxTime > 0 {
			left := common.MaxTime - time.Since(start)
			if left <= 0 {
				left = time.Millisecond
			}
			if o.MaxTime == 0 || o.MaxTime > left {
				o.MaxTime = left
			}
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "mc: phase %d/%d %s (%s)\n", i+1, len(phases), ph.Name, o.Strategy)
		}
		r := Search(s, o)
		total.States += r.States
		total.MaxDepth = max(total.MaxDepth, len(trace)+r.MaxDepth)
		trace = append(trace, r.Trace...)
		last := i == len(phases)-1
		if !last && r.Outcome == GoalFound {
			s = r.Final
			continue
		}
		total.Outcome, total.Predicate, total.Explanation = r.Outcome, r.Predicate, r.Explanation
		total.Final, total.Idempotence = r.Final, r.Idempotence
		if !last && r.Outcome != Violation {
			total.Explanation = fmt.Sprintf("phase %q ended %s without reaching its goal", ph.Name, r.Outcome)
		}
		break
	}
	total.Trace = trace
	total.Elapsed = time.Since(start)
	return total
}

// DefaultWorkers is a sensible worker count for this machine.
func DefaultWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }
