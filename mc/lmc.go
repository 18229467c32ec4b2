package mc

import (
	"fmt"
	"io"
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
	// Reps bounds the local states kept per node and projected value to
	// build system states from (0: 64).
	Reps int
	// NoPrune keeps local states no global execution reaches (see
	// lmc.alone): the paper's LMC, whose local view over-approximates.
	NoPrune bool
	// valid, if set, gets every system state a check confirms, and the
	// run goes on (tests).
	valid func(*State)
}

// LMCStats counts what a run did.
type LMCStats struct {
	Local       []int    // local states per node (Addrs order)
	Depth       []int    // longest local path per node
	Transitions int      // handler runs on local states (including reused results)
	Messages    int      // messages generated (the set I+)
	Built       int      // system states built for invariants
	Candidates  int      // of which some invariant failed
	Checks      int      // a-posteriori checks run
	Passed      int      // checks that found a global execution
	Longest     int      // events of the longest execution a check found
	Dropped     int      // candidates no check confirmed
	Unchecked   int      // candidates still waiting when the run stopped
	Pruned      int      // local states no global execution reaches, not expanded
	Unprojected []string // invariants without a projection (read every node)
}

// lmc is one run.
type lmc struct {
	o       LMCOptions
	init    *State
	sys     *system
	n       int
	locals  [][]*lmcLocal
	byKey   []map[uint64]*lmcLocal
	inbox   [][]*lmcMsg // unordered messages by receiver
	net     map[uint64]*lmcMsg
	stream  map[streamPos][]*lmcMsg
	preds   []*lmcPred
	tmp     State // runs handlers (tmp.nodes[i] is set first)
	stats   LMCStats
	start   time.Time
	last    time.Time
	reps    int
	pending []lmcCandidate // candidates waiting for drain
	ticks   int
	over    bool  // MaxTime is up (late)
	deepest int32 // greatest causal depth
	waiting int   // deferred messages
	out     *Result
}

// lmcLocal is one local state: the node, its pending timers, how many
// messages it took from and put on each incoming and outgoing stream, the
// timer firings it used, whether it crashed, and the first path found to
// it (parent and event).
type lmcLocal struct {
	i          int32
	in         *instance
	timers     []pendingTimer
	recv, sent []int32 // per peer node index
	fires      int32
	crashed    bool
	key        uint64
	parent     *lmcLocal
	ev         Event
	depth      int32 // events on the path
	clock      int32 // causal depth (LMCOptions.MaxDepth)
	// what expand has tried: messages of the inbox, stream messages at
	// recv per sender, timers and crash; messages too deep for the bound
	// wait in deferred
	nextNet    int
	nextStream []int
	tried      bool
	deferred   []lmcDeferred
	alone      int8 // 0: not checked; 1: reachable alone (lmc.alone); 2: not
	retries    int8
	alts       []lmcProducer // other steps to this state (replay's choices)
	cache      [][]Event     // paths, as of cacheAlts other steps
	cacheAlts  int
}

// lmcDeferred is a message a local state takes once the bound allows.
type lmcDeferred struct {
	m  *lmcMsg
	ev EventKind
}

// streamPos names the pos-th message (from 0) on the stream from to to.
type streamPos struct{ from, to, pos int32 }

// lmcMsg is a message of I+ with the local transitions that sent it and
// the smallest causal depth of those.
type lmcMsg struct {
	env       Envelope
	producers []lmcProducer
	clock     int32
}

// lmcProducer: the event ev from local state at sends the message (at nil:
// the message is in flight initially).
type lmcProducer struct {
	at    *lmcLocal
	ev    Event
	clock int32
}

const maxProducers = 8

// lmcHook, if set, sees each run at its end (tests).
var lmcHook func(*lmc)

// RunLMC checks init's system by local model checking.
func RunLMC(init *State, o LMCOptions) (*Result, *LMCStats) {
	e := &lmc{o: o, init: init, sys: init.sys, n: len(init.nodes), net: map[uint64]*lmcMsg{},
		stream: map[streamPos][]*lmcMsg{}, start: time.Now(), reps: o.Reps}
	e.last = e.start
	if e.reps == 0 {
		e.reps = 64
	}
	e.tmp = State{sys: e.sys, nodes: make([]*instance, e.n)}
	e.locals, e.byKey, e.inbox = make([][]*lmcLocal, e.n), make([]map[uint64]*lmcLocal, e.n), make([][]*lmcMsg, e.n)
	for _, p := range o.Invariants {
		e.addPred(p)
	}
	for _, env := range init.net {
		e.addNet(env, lmcProducer{})
	}
	sent := make([][]int32, e.n)
	for i := range sent {
		sent[i] = make([]int32, e.n)
	}
	for _, q := range init.streams {
		for _, env := range q.msgs {
			if env.from > 0 && env.to > 0 {
				e.addStream(env, sent[env.from-1][env.to-1], lmcProducer{})
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
	e.stats.Messages, e.stats.Unchecked = len(e.net), len(e.pending)
	for _, ms := range e.stream {
		e.stats.Messages += len(ms)
	}
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
// receiver (and fires its timers) until nothing new appears.
func (e *lmc) explore() Outcome {
	for bound := int32(1); e.o.MaxDepth == 0 || int(bound) <= e.o.MaxDepth; bound++ {
		for {
			before := e.stats.Transitions
			for i := range e.locals {
				for k := 0; k < len(e.locals[i]); k++ {
					if l := e.locals[i][k]; l.clock < bound {
						e.expand(l, bound)
					}
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
		if e.drain(); e.out != nil {
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
		l.nextStream = make([]int, e.n)
	}
	for j := range e.n {
		ms := e.stream[streamPos{int32(j), i, l.recv[j]}]
		for ; l.nextStream[j] < len(ms); l.nextStream[j]++ {
			e.take(l, lmcDeferred{ms[l.nextStream[j]], StreamIn}, bound)
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
				e.step(l, Event{Kind: Fire, Node: e.sys.addrs[i], Timer: t.hash, T: t.T}, 0)
			}
		}
	}
	a := e.sys.addrs[i]
	if set.MaxCrashes != 0 && (set.CrashTargets == nil && !slices.Contains(e.sys.clients, int(i)) || slices.Contains(set.CrashTargets, a)) {
		e.step(l, Event{Kind: Crash, Node: a}, 0)
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
		e.step(l, Event{Kind: d.ev, Env: d.m.env}, d.m.clock)
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

// step takes event ev from l: a new local state unless one with its key
// exists; what the handler sent joins I+ either way.
func (e *lmc) step(l *lmcLocal, ev Event, clock int32) {
	nl := &lmcLocal{i: l.i, in: l.in, timers: l.timers, recv: l.recv, sent: l.sent, fires: l.fires,
		parent: l, ev: ev, depth: l.depth + 1, clock: max(l.clock, clock) + 1}
	var ef *effect
	var err error
	switch ev.Kind {
	case Deliver:
		ef, err = e.handler(l, ev.Env.From, ev.Env.Msg, nil, ev.Env.hash)
	case StreamIn:
		nl.recv = slices.Clone(l.recv)
		nl.recv[ev.Env.from-1]++
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
	if err != nil {
		e.panicked(l, ev, err)
		return
	}
	if ef != nil {
		nl.in = ef.inst
		if len(ef.timers) > 0 {
			nl.timers = append(slices.Clip(nl.timers), ef.timers...)
		}
		p := lmcProducer{at: l, ev: ev, clock: nl.clock}
		for _, s := range ef.sends {
			e.addNet(s, p)
		}
		if len(ef.streams) > 0 {
			nl.sent = slices.Clone(nl.sent)
			for _, s := range ef.streams {
				if s.to > 0 {
					e.addStream(s, nl.sent[s.to-1], p)
					nl.sent[s.to-1]++
				}
			}
		}
	}
	nl.key = e.hash(nl)
	old, ok := e.byKey[l.i][nl.key]
	switch {
	case !ok:
		e.byKey[l.i][nl.key] = nl
		if !e.o.NoPrune && !e.alone(nl) {
			e.stats.Pruned++
			return
		}
		e.add(nl)
	case old.alone == 2 && old.retries < maxProducers:
		// A pruned state reached on another path: check that one.
		old.retries++
		old.parent, old.ev, old.depth, old.clock, old.alone = l, ev, nl.depth, nl.clock, 0
		if e.alone(old) {
			e.stats.Pruned--
			e.add(old)
		}
	case len(old.alts) < maxProducers:
		old.alts = append(old.alts, lmcProducer{at: l, ev: ev})
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
	if e.o.Settings.MaxTimerFires != Unlimited {
		h = mix(h ^ uint64(l.fires))
	}
	return h
}

func (e *lmc) addNet(env Envelope, p lmcProducer) {
	if env.to <= 0 {
		return // to no node of the run: the network drops it
	}
	m := e.net[env.hash]
	if m == nil {
		m = &lmcMsg{env: env, clock: p.clock}
		e.net[env.hash] = m
		e.inbox[env.to-1] = append(e.inbox[env.to-1], m)
	}
	m.produced(p)
}

func (e *lmc) addStream(env Envelope, pos int32, p lmcProducer) {
	k := streamPos{env.from - 1, env.to - 1, pos}
	ms := e.stream[k]
	i := slices.IndexFunc(ms, func(m *lmcMsg) bool { return m.env.hash == env.hash })
	if i < 0 {
		ms = append(ms, &lmcMsg{env: env, clock: p.clock})
		e.stream[k], i = ms, len(ms)-1
	}
	ms[i].produced(p)
}

func (m *lmcMsg) produced(p lmcProducer) {
	m.clock = min(m.clock, p.clock)
	if len(m.producers) < maxProducers {
		m.producers = append(m.producers, p)
	}
}

// paths lists up to max paths to l: its first, then through its other
// incoming steps (at most lmcHops of those on one path: they may cycle).
// The result is kept until l gains another incoming step.
func (l *lmcLocal) paths(max int) [][]Event {
	if l.cache == nil || len(l.cache) < max && l.cacheAlts != len(l.alts) {
		l.cache, l.cacheAlts = l.pathsHops(max, lmcHops), len(l.alts)
	}
	return l.cache[:min(max, len(l.cache))]
}

const lmcHops = 4

func (l *lmcLocal) pathsHops(max, hops int) [][]Event {
	if max <= 0 {
		return nil
	}
	if l.parent == nil {
		return [][]Event{nil}
	}
	edges := []lmcProducer{{at: l.parent, ev: l.ev}}
	if hops > 0 {
		edges = append(edges, l.alts...)
	}
	var out [][]Event
	for k, a := range edges {
		if len(out) >= max {
			break
		}
		h := hops
		if k > 0 {
			h--
		}
		for _, q := range a.at.pathsHops(max-len(out), h) {
			if len(out) >= max {
				return out
			}
			out = append(out, append(slices.Clip(q), a.ev))
		}
	}
	return out
}

// path is the events of l's path from the initial local state.
func (l *lmcLocal) path() []Event {
	var out []Event
	for p := l; p.parent != nil; p = p.parent {
		out = append(out, p.ev)
	}
	slices.Reverse(out)
	return out
}
