package mc

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// LMC is local model checking (docs/model-checking.md, "Local model
// checking"): one set of local states per node, one growing set of
// messages, system states built only for invariants and checked a
// posteriori for reachability. RunLMC runs it.
const LMC Strategy = "lmc"

// LMCOptions bound a local model checking run.
type LMCOptions struct {
	Settings   Settings
	Invariants []Predicate
	// MaxDepth bounds the causal depth of local states (0: none): a local
	// state is one deeper than the state before it and than the state
	// that sent the message it took (a Lamport clock), so every global
	// execution of MaxDepth events is within it. The run deepens the
	// bound one at a time up to it.
	MaxDepth      int
	MaxTime       time.Duration
	MaxLocal      int // local states in all (0: no bound)
	Progress      io.Writer
	ProgressEvery time.Duration
	// MaxSearch bounds the global states one a-posteriori check visits
	// (0: 1<<18); a check that reaches it gives up (LMCStats.Abandoned).
	MaxSearch int
	// NoPrune keeps local states no global execution reaches (see
	// lmc.reaches): the paper's LMC, whose local view over-approximates.
	NoPrune bool
	// NoWalk runs no walks (mc/lmc_walk.go): the uniform deepening alone.
	// WalkUnjudged runs them without judging the invariants on the walks'
	// own states: violations are then found only through combinations.
	NoWalk, WalkUnjudged bool
	// valid, if set, gets every system state a check confirms, and the
	// run goes on (tests).
	valid func(*State)
}

// LMCStats counts what a run did.
type LMCStats struct {
	Bound       int      // the causal-depth bound explored last
	Local       []int    // local states per node (Addrs order)
	Depth       []int    // longest local path per node (the first path found to each state)
	Confirmed   []int    // per node, the most events it takes in an execution a check found to one of its states
	Transitions int      // handler runs on local states (including reused results)
	Edges       int      // steps between local states recorded (no-ops left out)
	Messages    int      // messages generated (the set I+)
	Built       int      // system states built for invariants
	Candidates  int      // of which some invariant failed
	Checks      int      // a-posteriori checks run
	Passed      int      // checks that found a global execution
	Merged      int      // local states confirmed by causal merge, without a check
	Starts      int      // steps that start an incarnation
	Searched    int      // global states the checks visited
	Longest     int      // events of the longest execution a check found
	Dropped     int      // candidates no check confirmed
	Unchecked   int      // candidates still waiting when the run stopped
	Unbuilt     int      // system states not yet built when the run stopped
	Pruned      int      // local states no global execution reaches, not expanded
	Abandoned   int      // checks that gave up at MaxSearch (or, pruning, lmcReachSearch)
	Unsure      int      // local states expanded because their pruning check gave up
	Unprojected []string // invariants without a projection (read every node)
	Walks       int      // walks run (mc/lmc_walk.go)
	WalkSteps   int      // events the walks took
	ByWalk      bool     // the violation was found on a walk's own execution
	Corrupt     int      // violations not reported: a handler changed shared memory (lmc.report)
}

// lmc is one run.
type lmc struct {
	o      LMCOptions
	init   *State
	sys    *system
	n      int
	locals [][]*lmcLocal
	byKey  []map[uint64]*lmcLocal
	inbox  [][]*lmcMsg // unordered messages by receiver
	net    map[uint64]*lmcMsg
	stream map[streamPos][]*lmcMsg
	links  [][]*lmcMsg // every stream message, by link (from*n+to)
	msgs   []*lmcMsg   // I+, by id
	preds  []*lmcPred
	tmp    State // runs handlers (tmp.nodes[i] is set first)
	stats  LMCStats
	start  time.Time
	last   time.Time
	// work counts handler runs, system states built and global states
	// the checks visited; drain stops at yield (0: never), and the
	// current bound's exploration began at boundWork
	work, yield, boundWork int
	builds                 []*lmcBuild     // new classes whose combinations drain builds
	pending                []*lmcCandidate // candidates waiting for drain
	failed                 []*lmcCandidate // candidates no check confirmed yet
	pruned                 []*lmcLocal
	version                int // grows with every edge recorded and local state added
	ticks                  int
	over                   bool   // MaxTime is up (late)
	deepest                int32  // greatest causal depth
	waiting                int    // deferred messages
	mark                   uint32 // lmcSearch.possible's runs
	epoch                  uint32 // lmcSearch runs
	out                    *Result
	rng                    *rand.Rand  // walks'
	known                  []*lmcLocal // confirmed states with an execution, not crashed (walk starts)
	walking                bool        // lmc.step runs for a walk, which confirms what it adds
	walkWork               int         // the walks' work (not in work)
}

// lmcLocal is one local state: the node, its pending timers, how many
// messages it took from and put on each incoming and outgoing stream, the
// timer firings it used, whether it crashed, the first path found to it
// (parent and event) and every recorded step into and out of it.
type lmcLocal struct {
	i          int32
	in         *instance
	timers     []pendingTimer
	recv, sent []int32 // per peer node index
	fires      int32
	crashed    bool
	// incarnations it started; per peer, the incarnation of the last
	// stream message taken from it and whether it started one since
	gen     int32
	peerGen []int32 // nil: all 0
	reset   []bool  // nil: none
	key     uint64
	parent  *lmcLocal
	ev      Event
	depth   int32 // events on the path
	clock   int32 // causal depth (LMCOptions.MaxDepth)
	// what expand has tried: messages of the inbox, stream messages at
	// recv per sender, timers and crash; messages too deep for the bound
	// wait in deferred
	nextNet    int
	nextStream []int
	nextSkip   []int // per sender, in lmc.links
	tried      bool
	deferred   []lmcDeferred
	foot       *lmcFoot // what its last check read, while pruned
	stamp      int      // lmc.version when it last gained an incoming edge
	ins, outs  []*lmcEdge
	virtual    bool // the state after a handler panic (lmc.panicked)
	pruned     bool // in lmc.pruned
	// executions found to it (lmc.confirm), and whether there is one
	wits      [][]lmcMove
	confirmed bool
	mark      uint32 // lmcSearch.possible reached it (lmc.mark)
	// an lmcSearch's (lmc.epoch): a target (tMark), reached by a crash
	// (cMark), its incoming edges followed (onMark), its allowed edges
	// out (aOuts, as of aMark)
	tMark, cMark, onMark, aMark uint32
	aOuts                       []*lmcEdge
}

// lmcEdge is a step between local states: event ev taken in from, the
// message it took (nil: a timer or a crash) and what it sent.
type lmcEdge struct {
	from, to *lmcLocal
	ev       Event
	m        *lmcMsg
	sends    []*lmcMsg
	mark     uint32 // allowed in the lmcSearch of this lmc.epoch
	start    bool   // m starts a new incarnation of the node
}

// lmcDeferred is a message a local state takes once the bound allows.
type lmcDeferred struct {
	m  *lmcMsg
	ev EventKind
}

// streamPos names the pos-th message (from 0) on the stream from to to.
type streamPos struct{ from, to, pos int32 }

// lmcMsg is a message of I+ with every step that sent it (none: it was in
// flight initially) and the smallest causal depth of those.
type lmcMsg struct {
	env       Envelope
	producers []*lmcEdge
	clock     int32
	stamp     int   // lmc.version when it last gained a producer
	id        int32 // index in lmc.msgs
	ordered   bool  // on a stream
	pos, gen  int32 // a stream message's place and its sender's incarnation (lmcLocal.gen)
	// lmcSearch.possible's: sent (mark), and the edges waiting for it
	mark, waitMark uint32
	waits          []*lmcEdge
	// an lmcSearch's (lmc.epoch): allowed edges that take it
	uMark uint32
	uses  int32
}

// lmcHook, if set, sees each run at its end (tests).
var lmcHook func(*lmc)

// RunLMC checks init's system by local model checking.
func RunLMC(init *State, o LMCOptions) (*Result, *LMCStats) {
	e := &lmc{o: o, init: init, sys: init.sys, n: len(init.nodes), net: map[uint64]*lmcMsg{},
		stream: map[streamPos][]*lmcMsg{}, start: time.Now()}
	e.links = make([][]*lmcMsg, e.n*e.n)
	e.last = e.start
	if e.o.MaxSearch == 0 {
		e.o.MaxSearch = 1 << 18
	}
	e.tmp = State{sys: e.sys, nodes: make([]*instance, e.n)}
	e.stats.Confirmed = make([]int, e.n)
	e.locals, e.byKey, e.inbox = make([][]*lmcLocal, e.n), make([]map[uint64]*lmcLocal, e.n), make([][]*lmcMsg, e.n)
	for _, p := range o.Invariants {
		e.addPred(p)
	}
	for _, env := range init.net {
		e.addNet(env, nil, 0)
	}
	sent := make([][]int32, e.n)
	for i := range sent {
		sent[i] = make([]int32, e.n)
	}
	for _, q := range init.streams {
		for _, env := range q.msgs {
			if env.from > 0 && env.to > 0 {
				e.addStream(env, sent[env.from-1][env.to-1], 0, nil, 0)
				sent[env.from-1][env.to-1]++
			}
		}
	}
	for i := range e.n {
		e.byKey[i] = map[uint64]*lmcLocal{}
		l := &lmcLocal{i: int32(i), in: init.nodes[i], timers: init.timers[i], recv: make([]int32, e.n), sent: sent[i],
			crashed: init.crashed[i]}
		l.key = e.hash(l)
		e.add(l)
	}
	out := e.explore()
	if lmcHook != nil {
		lmcHook(e)
	}
	if e.out == nil {
		e.out = &Result{Outcome: out}
	}
	r := e.out
	r.Elapsed = time.Since(e.start)
	e.stats.Local, e.stats.Depth = make([]int, e.n), make([]int, e.n)
	for i, ls := range e.locals {
		e.stats.Local[i] = len(ls)
		r.States += len(ls)
		for _, l := range ls {
			e.stats.Depth[i] = max(e.stats.Depth[i], int(l.depth))
		}
		r.MaxDepth = max(r.MaxDepth, e.stats.Depth[i])
	}
	e.stats.Messages, e.stats.Unchecked = len(e.msgs), len(e.pending)
	for _, b := range e.builds {
		e.stats.Unbuilt += b.left()
	}
	e.stats.Dropped += len(e.failed)
	return r, &e.stats
}

// RunLMC checks the scenario by local model checking; common supplies
// MaxTime, MaxDepth (per node path), MaxStates (local states) and
// Progress.
func (sc *Scenario) RunLMC(common Options) (*Result, *LMCStats) {
	o := LMCOptions{Settings: sc.Settings, MaxDepth: common.MaxDepth, MaxTime: common.MaxTime,
		MaxLocal: common.MaxStates, Progress: common.Progress, ProgressEvery: common.ProgressEvery}
	if sc.Invariants != nil {
		o.Invariants = sc.Invariants()
	}
	return RunLMC(sc.Init(), o)
}

// explore deepens the bound on local paths one event at a time; within a
// bound it delivers every message of I+ to every local state of its
// receiver (and fires its timers) until nothing new appears and no
// pruned local state has become reachable, then checks the candidates.
func (e *lmc) explore() Outcome {
	for bound := int32(1); e.o.MaxDepth == 0 || int(bound) <= e.o.MaxDepth; bound++ {
		e.boundWork, e.stats.Bound = e.work, int(bound)
		last := false
		for {
			for {
				before := e.stats.Transitions
				for i := range e.locals {
					for k := 0; k < len(e.locals[i]); k++ {
						if l := e.locals[i][k]; l.clock < bound {
							e.expand(l, bound)
						}
						e.walks()
						if e.out != nil {
							return Violation
						}
						if out, stop := e.limit(); stop {
							return out
						}
					}
				}
				if e.stats.Transitions == before {
					break
				}
			}
			// the pruned states: a share of the work while deeper states
			// wait, all of them before the run ends
			last = e.deepest < bound && e.waiting == 0 || int(bound) == e.o.MaxDepth
			if !last {
				e.yield = e.work + max(e.work-e.boundWork, 10000)
			}
			found := e.unprune()
			e.yield = 0
			if e.out != nil {
				return Violation
			}
			if !found {
				break
			}
		}
		if e.drain(last); e.out != nil {
			return Violation
		}
		if out, stop := e.limit(); stop {
			return out
		}
		if e.deepest < bound && e.waiting == 0 {
			return Exhausted // every local state was expanded
		}
	}
	return Exhausted
}

// unprune checks again the pruned local states whose graph has grown
// where their last check read it, adds those now reached, and reports
// whether there were any.
func (e *lmc) unprune() bool {
	found := false
	keep := e.pruned[:0]
	for k, p := range e.pruned {
		if !p.pruned { // a walk reached it
			continue
		}
		if e.walks(); e.out != nil {
			keep = append(keep, e.pruned[k:]...)
			break
		}
		if (p.foot == nil || p.foot.stale()) && e.out == nil && !e.late() && !e.yielded() {
			if yes, _ := e.reaches(p, false); yes {
				e.stats.Pruned--
				p.pruned = false
				e.add(p)
				found = true
				continue
			}
		}
		keep = append(keep, p)
	}
	clear(e.pruned[len(keep):])
	e.pruned = keep
	return found
}

func (e *lmc) limit() (Outcome, bool) {
	now := time.Now()
	if e.o.Progress != nil && now.Sub(e.last) >= max(e.o.ProgressEvery, time.Second) {
		e.last = now
		fmt.Fprintf(e.o.Progress, "lmc: local=%d transitions=%d messages=%d built=%d checks=%d/%d elapsed=%s\n",
			e.count(), e.stats.Transitions, len(e.net), e.stats.Built, e.stats.Passed, e.stats.Checks, now.Sub(e.start).Round(time.Millisecond))
	}
	if e.o.MaxTime > 0 && now.Sub(e.start) > e.o.MaxTime {
		return TimeLimit, true
	}
	if e.o.MaxLocal > 0 && e.count() >= e.o.MaxLocal {
		return StateLimit, true
	}
	return "", false
}

// late reports, checking the clock now and then, whether MaxTime is up.
func (e *lmc) late() bool {
	if e.o.MaxTime <= 0 {
		return false
	}
	if e.ticks++; e.ticks%1024 == 0 {
		e.over = time.Since(e.start) > e.o.MaxTime
	}
	return e.over
}

// yielded reports whether drain has done its share of work.
func (e *lmc) yielded() bool { return e.yield > 0 && e.work >= e.yield }

func (e *lmc) count() int {
	n := 0
	for _, ls := range e.locals {
		n += len(ls)
	}
	return n
}

// expand takes every event of l not tried yet, within bound.
func (e *lmc) expand(l *lmcLocal, bound int32) {
	if l.crashed {
		return
	}
	i := l.i
	if len(l.deferred) > 0 {
		ds := l.deferred
		l.deferred = nil
		e.waiting -= len(ds)
		for _, d := range ds {
			e.take(l, d, bound)
		}
	}
	for l.nextNet < len(e.inbox[i]) {
		m := e.inbox[i][l.nextNet]
		l.nextNet++
		e.take(l, lmcDeferred{m, Deliver}, bound)
	}
	if l.nextStream == nil {
		l.nextStream, l.nextSkip = make([]int, e.n), make([]int, e.n)
	}
	for j := range e.n {
		ms := e.stream[streamPos{int32(j), i, l.recv[j]}]
		for ; l.nextStream[j] < len(ms); l.nextStream[j]++ {
			if m := ms[l.nextStream[j]]; m.gen == l.peer(j) {
				e.take(l, lmcDeferred{m, StreamIn}, bound)
			}
		}
		ls := e.links[j*e.n+int(i)]
		for ; l.nextSkip[j] < len(ls); l.nextSkip[j]++ {
			if m := ls[l.nextSkip[j]]; l.skips(j, m) {
				e.take(l, lmcDeferred{m, StreamIn}, bound)
			}
		}
	}
	if l.tried {
		return
	}
	l.tried = true
	set := e.o.Settings
	if allows(set.MaxTimerFires, int(l.fires)) {
		for j, t := range l.timers {
			if timerReady(l.timers, j) && !slices.ContainsFunc(l.timers[:j], func(u pendingTimer) bool { return u.hash == t.hash }) {
				e.step(l, Event{Kind: Fire, Node: e.sys.addrs[i], Timer: t.hash, T: t.T}, nil, 0)
			}
		}
	}
	a := e.sys.addrs[i]
	if set.MaxCrashes != 0 && (set.CrashTargets == nil && !slices.Contains(e.sys.clients, int(i)) || slices.Contains(set.CrashTargets, a)) {
		e.step(l, Event{Kind: Crash, Node: a}, nil, 0)
	}
}

// take delivers d's message to l, or defers it while it is too deep.
func (e *lmc) take(l *lmcLocal, d lmcDeferred, bound int32) {
	if max(l.clock, d.m.clock)+1 > bound {
		l.deferred = append(l.deferred, d)
		e.waiting++
		return
	}
	if d.ev == StreamIn || e.mayDeliver(l, d.m.env.hash) {
		e.step(l, Event{Kind: d.ev, Env: d.m.env}, d.m, d.m.clock)
	}
}

// mayDeliver applies the duplicate bound: l's path delivers one message
// at most 1+MaxDuplicates times.
func (e *lmc) mayDeliver(l *lmcLocal, h uint64) bool {
	if e.o.Settings.MaxDuplicates == Unlimited {
		return true
	}
	c := 0
	for p := l; p.parent != nil; p = p.parent {
		if p.ev.Kind == Deliver && p.ev.Env.hash == h {
			c++
		}
	}
	return c <= e.o.Settings.MaxDuplicates
}

// step takes event ev (taking message m, if any) from l: a new local
// state unless one with its key exists, and an edge to it unless the
// step changes and sends nothing (or l has it already); what the handler
// sent joins I+ either way. It returns l's edge for the step, if any.
func (e *lmc) step(l *lmcLocal, ev Event, m *lmcMsg, clock int32) *lmcEdge {
	if x := l.edge(ev, m); x != nil { // a walk took it first
		return x
	}
	nl := &lmcLocal{i: l.i, in: l.in, timers: l.timers, recv: l.recv, sent: l.sent, fires: l.fires,
		gen: l.gen, peerGen: l.peerGen, reset: l.reset, parent: l, ev: ev, depth: l.depth + 1, clock: max(l.clock, clock) + 1}
	var ef *effect
	var err error
	switch ev.Kind {
	case Deliver:
		ef, err = e.handler(l, ev.Env.From, ev.Env.Msg, nil, ev.Env.hash)
	case StreamIn:
		j := ev.Env.from - 1
		nl.recv = slices.Clone(l.recv)
		nl.recv[j] = m.pos + 1
		if m.gen != l.peer(int(j)) {
			nl.peerGen = slices.Clone(l.peerGen)
			if nl.peerGen == nil {
				nl.peerGen = make([]int32, e.n)
			}
			nl.peerGen[j] = m.gen
		}
		if l.reset != nil && l.reset[j] {
			nl.reset = slices.Clone(l.reset)
			nl.reset[j] = false
		}
		ef, err = e.handler(l, ev.Env.From, ev.Env.Msg, nil, ev.Env.hash)
	case Fire:
		j := slices.IndexFunc(l.timers, func(t pendingTimer) bool { return t.hash == ev.Timer })
		nl.timers = slices.Delete(slices.Clone(l.timers), j, j+1)
		nl.fires++
		ef, err = e.handler(l, "", nil, ev.T, ev.Timer)
	case Crash:
		nl.crashed, nl.timers = true, nil
	}
	e.stats.Transitions++
	e.work++
	if err != nil {
		e.panicked(l, ev, m)
		return nil
	}
	ed := &lmcEdge{from: l, ev: ev, m: m}
	if m != nil && starts(e.sys.addrs[l.i], l.in.nd, ev.Env.Msg) {
		// a new incarnation: the old one's timers and streams end
		// (State.startIncarnation)
		ed.start, nl.timers, nl.gen = true, nil, l.gen+1
		e.stats.Starts++
		nl.reset = make([]bool, e.n)
		for j := range nl.reset {
			nl.reset[j] = true
		}
	}
	if ef != nil {
		nl.in = ef.inst
		if len(ef.timers) > 0 {
			nl.timers = append(slices.Clip(nl.timers), ef.timers...)
		}
		for _, s := range ef.sends {
			if x := e.addNet(s, ed, nl.clock); x != nil {
				ed.sends = append(ed.sends, x)
			}
		}
		if len(ef.streams) > 0 {
			nl.sent = slices.Clone(nl.sent)
			for _, s := range ef.streams {
				if s.to > 0 {
					ed.sends = append(ed.sends, e.addStream(s, nl.sent[s.to-1], nl.gen, ed, nl.clock))
					nl.sent[s.to-1]++
				}
			}
		}
	}
	nl.key = e.hash(nl)
	old, ok := e.byKey[l.i][nl.key]
	if ok {
		if old == l && len(ed.sends) == 0 {
			return nil
		}
		ed.to = old
		old.clock = min(old.clock, nl.clock)
		e.link(ed)
		if !e.walking && old.confirmed && len(old.wits) < lmcWitnesses && old.parent != nil {
			tries := 0
			if p := e.mergeEdge(ed, &tries); p != nil {
				e.confirm(old, p)
			}
		}
		return ed
	}
	ed.to = nl
	e.link(ed)
	e.byKey[l.i][nl.key] = nl
	if !e.o.NoPrune && !e.walking {
		if yes, _ := e.reaches(nl, true); !yes {
			nl.pruned = true
			e.pruned = append(e.pruned, nl)
			e.stats.Pruned++
			return ed
		}
	}
	e.add(nl)
	return ed
}

// link records ed in the local-state graph.
func (e *lmc) link(ed *lmcEdge) {
	e.version++
	e.stats.Edges++
	ed.from.outs = append(ed.from.outs, ed)
	ed.to.ins = append(ed.to.ins, ed)
	ed.to.stamp = e.version
	for _, m := range ed.sends {
		m.stamp = e.version
	}
}

// handler runs node l.i's handler in l, or reuses the run's result (the
// search's handler-result cache, same keys).
func (e *lmc) handler(l *lmcLocal, from node.Addr, m node.Message, t node.Timer, evh uint64) (*effect, error) {
	key := memoKey{h: l.in.h, ev: evh, i: l.i, timer: m == nil}
	shard := mix(key.h ^ key.ev)
	if ef, ok := e.sys.memo.Get(key, shard); ok {
		return ef, nil
	}
	e.tmp.nodes[l.i] = l.in
	ef, err := e.tmp.run(int(l.i), from, m, t)
	if err == nil {
		e.sys.memo.Put(key, shard, ef)
	}
	return ef, err
}

func (e *lmc) add(l *lmcLocal) {
	e.locals[l.i] = append(e.locals[l.i], l)
	e.byKey[l.i][l.key] = l
	e.deepest = max(e.deepest, l.clock)
	e.version++
	for _, p := range e.preds {
		if e.out != nil {
			return
		}
		p.added(e, l)
	}
}

// hash is a local state's key: node, timers, stream counts, crash flag,
// and the timer firings used when they are bounded.
func (e *lmc) hash(l *lmcLocal) uint64 {
	h := mix(kNode ^ l.in.h)
	for _, t := range l.timers {
		h = mix(h ^ t.hash)
		h = mix(h ^ kTimer ^ uint64(t.Min))
		h = mix(h ^ uint64(t.Max))
	}
	for j := range l.recv {
		h = mix(h ^ kLink ^ uint64(j)<<32 ^ uint64(l.recv[j]))
		h = mix(h ^ kReturn ^ uint64(j)<<32 ^ uint64(l.sent[j]))
	}
	if l.crashed {
		h = mix(h ^ kCrashed)
	}
	if l.gen > 0 || l.peerGen != nil {
		h = mix(h ^ kReturn ^ uint64(l.gen)<<8)
		for j := range e.n {
			r := uint64(0)
			if l.reset != nil && l.reset[j] {
				r = 1
			}
			h = mix(h ^ kLink ^ uint64(j)<<32 ^ uint64(l.peer(j))<<1 ^ r)
		}
	}
	if e.o.Settings.MaxTimerFires != Unlimited {
		h = mix(h ^ uint64(l.fires))
	}
	return h
}

// addNet adds an unordered message sent by ed (nil: in flight initially)
// to I+ and returns it (nil: to no node of the run, which drops it).
func (e *lmc) addNet(env Envelope, ed *lmcEdge, clock int32) *lmcMsg {
	if env.to <= 0 {
		return nil
	}
	m := e.net[env.hash]
	if m == nil {
		m = &lmcMsg{env: env, clock: clock, id: int32(len(e.msgs))}
		e.msgs = append(e.msgs, m)
		e.net[env.hash] = m
		e.inbox[env.to-1] = append(e.inbox[env.to-1], m)
	}
	m.produced(ed, clock)
	return m
}

// addStream adds a stream message at place pos of its link, sent by ed
// in its sender's incarnation gen, to I+ and returns it.
func (e *lmc) addStream(env Envelope, pos, gen int32, ed *lmcEdge, clock int32) *lmcMsg {
	k := streamPos{env.from - 1, env.to - 1, pos}
	ms := e.stream[k]
	i := slices.IndexFunc(ms, func(m *lmcMsg) bool { return m.env.hash == env.hash && m.gen == gen })
	if i < 0 {
		m := &lmcMsg{env: env, clock: clock, id: int32(len(e.msgs)), ordered: true, pos: pos, gen: gen}
		e.msgs = append(e.msgs, m)
		ms = append(ms, m)
		e.stream[k], i = ms, len(ms)-1
		l := int(k.from)*e.n + int(k.to)
		e.links[l] = append(e.links[l], m)
	}
	ms[i].produced(ed, clock)
	return ms[i]
}

func (m *lmcMsg) produced(ed *lmcEdge, clock int32) {
	m.clock = min(m.clock, clock)
	if ed != nil {
		m.producers = append(m.producers, ed)
	}
}

// peer is the incarnation of the last stream message l took from node j.
func (l *lmcLocal) peer(j int) int32 {
	if l.peerGen == nil {
		return 0
	}
	return l.peerGen[j]
}

// skips reports whether l may take stream message m from node j out of
// FIFO order: its stream from j restarted since it last took from j (it
// or j started an incarnation), and m was sent no earlier than what it
// took, so it may head the new stream.
func (l *lmcLocal) skips(j int, m *lmcMsg) bool {
	g, p := l.peer(j), l.recv[j]
	if m.pos < p || m.gen < g || m.pos == p && m.gen == g {
		return false
	}
	return m.gen > g || l.reset != nil && l.reset[j]
}
