package mc

import "errors"

// lmcSearch is LMC's a-posteriori check: a depth-first search over global
// states for an execution that takes every target node to one of its
// target local states. Each node moves only along recorded edges of its
// local-state graph: a target node along edges from which a target is
// still reachable, any other node along edges that lead to sending a
// message some allowed edge takes (lmcSearch.edges). Crashes are taken
// last (see done). A global state is kept as the edges' results say: each
// node's local state, the unordered messages in flight (a multiset), the
// stream queues and the budgets used; an execution found is then replayed
// with State.Apply (replay), which is what makes a report sound.
//
// It is complete relative to the graph: events of different nodes
// commute (a node's next event consumes only its own messages, streams
// and timers, and budgets count totals), so at each state it suffices to
// try the enabled events of a set of nodes closed under "waits for a
// message from" that contains a target node not yet at its target (see
// moves). Any execution reaching the targets, cut down to what the
// targets' events causally need, starts with one of those events up to
// reordering, so the search misses none. Visited states are not searched
// twice, and a state from which even the relaxed local view cannot reach
// the targets (possible) is abandoned.
type lmcSearch struct {
	e *lmc
	// ep marks, on the graph's states, edges and messages, what this
	// search computed (lmc.epoch): targets, allowed edges and their uses
	ep     uint32
	target [][]*lmcLocal     // per node: the states it may end in (nil: free)
	extra  *lmcEdge          // an edge not in the graph (a handler panic)
	starts []int32           // per node, the greatest incarnation an allowed edge starts (nil: none)
	peers  [][]int           // per node, the nodes its allowed edges stream with (with starts)
	goal   func(*State) bool // nil: reaching the targets is enough
	seen   map[uint64]bool
	left   int
	foot   lmcFoot

	// the current global state
	cur          []*lmcLocal
	count        []int32     // copies in flight of each unordered message, by id
	queues       [][]*lmcMsg // per link (from*n+to): what was streamed on it since it (re)started
	heads        []int32     // per link: how many of those were taken
	dups, fires  int
	h            uint64
	path         []lmcMove
	todo         []*lmcLocal // possible's
	taken        []*lmcEdge
	trace        []Event // the execution found, replayed
	final        *State
	err          error // the handler panic extra ends with
	late, gaveUp bool  // stopped by MaxTime or drain's share, by MaxSearch
}

// lmcFoot is what a check read of the graph: the local states whose
// incoming edges it followed and the messages whose senders it looked up
// (lmcSearch.edges), as of lmc.version at. Its answer stands until one of
// them gains an edge (stamp).
type lmcFoot struct {
	states []*lmcLocal
	msgs   []*lmcMsg
	at     int
}

// stale reports whether the graph a check read has grown since.
func (f *lmcFoot) stale() bool {
	for _, l := range f.states {
		if l.stamp > f.at {
			return true
		}
	}
	for _, m := range f.msgs {
		if m.stamp > f.at {
			return true
		}
	}
	return false
}

type lmcMove struct {
	ed    *lmcEdge
	dup   bool       // deliver and keep a copy in flight (Duplicate)
	added uint64     // which sends added a copy (KeepDelivered adds none twice)
	saved []lmcSaved // the streams an incarnation start ended
}

// search looks for an execution taking each node i with a target to one
// of target[i] (the others free) where goal holds.
func (e *lmc) search(target [][]*lmcLocal, extra *lmcEdge, goal func(*State) bool, budget int) *lmcSearch {
	q := e.initial()
	q.extra, q.goal, q.seen, q.left, q.foot = extra, goal, map[uint64]bool{}, budget, lmcFoot{at: e.version}
	e.stats.Checks++
	q.edges(target)
	q.dfs()
	e.stats.Searched += budget - q.left
	switch {
	case q.final != nil:
		e.stats.Passed++
		e.stats.Longest = max(e.stats.Longest, len(q.trace))
	case q.gaveUp && budget > lmcQuickSearch:
		e.stats.Abandoned++
	}
	return q
}

// initial is a search at the initial global state.
func (e *lmc) initial() *lmcSearch {
	n := e.n
	e.epoch++
	q := &lmcSearch{e: e, ep: e.epoch, target: make([][]*lmcLocal, n),
		cur: make([]*lmcLocal, n), count: make([]int32, len(e.msgs)), queues: make([][]*lmcMsg, n*n), heads: make([]int32, n*n)}
	for i := range q.cur {
		q.cur[i] = e.locals[i][0]
		q.h += q.nodePart(i)
	}
	for _, env := range e.init.net {
		if m := e.net[env.hash]; m != nil && (!e.sys.keep || q.count[m.id] == 0) {
			q.count[m.id]++
			q.h += mix(m.env.hash)
		}
	}
	for _, s := range e.init.streams {
		for k, env := range s.msgs {
			if env.from > 0 && env.to > 0 {
				ms := e.stream[streamPos{env.from - 1, env.to - 1, int32(k)}]
				for _, m := range ms {
					if m.env.hash == env.hash {
						q.push(m)
					}
				}
			}
		}
	}
	return q
}

// edges computes the allowed edges: for a target node, the edges into
// states from which a target is reachable (a crashed target is reached
// through its crash edge, taken at the end); for the others, the edges
// on the way to an edge sending a wanted message, a message wanted when
// an allowed edge takes it.
func (q *lmcSearch) edges(target [][]*lmcLocal) {
	var states []*lmcLocal
	var msgs []*lmcMsg
	ep := q.ep
	allow := func(ed *lmcEdge) {
		if ed.mark == ep {
			return
		}
		ed.mark = ep
		l := ed.from
		if l.aMark != ep {
			l.aMark, l.aOuts = ep, l.aOuts[:0]
		}
		l.aOuts = append(l.aOuts, ed)
		if ed.start {
			if q.starts == nil {
				q.starts = make([]int32, q.e.n)
			}
			q.starts[l.i] = max(q.starts[l.i], ed.to.gen)
		}
		q.streamsWith(ed)
		if m := ed.m; m != nil {
			if m.uMark != ep {
				m.uMark, m.uses = ep, 0
				msgs = append(msgs, m)
				q.foot.msgs = append(q.foot.msgs, m)
			}
			m.uses++
		}
	}
	reach := func(l *lmcLocal) {
		if l.onMark != ep {
			l.onMark = ep
			states = append(states, l)
			q.foot.states = append(q.foot.states, l)
		}
	}
	for i, ts := range target {
		if ts == nil {
			continue
		}
		for _, t := range ts {
			if !t.crashed {
				q.addTarget(i, t, false)
				reach(t)
				continue
			}
			for _, ed := range t.ins {
				if ed.ev.Kind == Crash {
					q.addTarget(i, ed.from, true)
					reach(ed.from)
				}
			}
		}
	}
	for len(states) > 0 || len(msgs) > 0 {
		if n := len(states); n > 0 {
			l := states[n-1]
			states = states[:n-1]
			for _, ed := range l.ins {
				if ed.ev.Kind != Crash {
					allow(ed)
					reach(ed.from)
				}
			}
			continue
		}
		m := msgs[len(msgs)-1]
		msgs = msgs[:len(msgs)-1]
		for _, ed := range m.producers {
			if q.target[ed.from.i] == nil {
				allow(ed)
				reach(ed.from)
			}
		}
	}
	if x := q.extra; x != nil {
		allow(x)
	}
}

// addTarget makes l a target of node i, reached by a crash from it if
// crash.
func (q *lmcSearch) addTarget(i int, l *lmcLocal, crash bool) {
	if l.tMark != q.ep {
		l.tMark = q.ep
		q.target[i] = append(q.target[i], l)
	}
	if crash {
		l.cMark = q.ep
	}
}

// at reports whether l is a target of its node.
func (q *lmcSearch) at(l *lmcLocal) bool { return l.tMark == q.ep }

// out lists the allowed edges out of l.
func (q *lmcSearch) out(l *lmcLocal) []*lmcEdge {
	if l.aMark == q.ep {
		return l.aOuts
	}
	return nil
}

// possible is a quick necessary condition for the search to succeed from
// the current state: in the local view restricted to the allowed edges
// (every message sent stays available, every node may be in all its
// states at once), each target node reaches a target.
func (q *lmcSearch) possible() bool {
	e := q.e
	e.mark++
	mk := e.mark
	states, edges := q.todo[:0], q.taken[:0]
	for _, l := range q.cur {
		if l.mark != mk {
			l.mark = mk
			states = append(states, l)
		}
	}
	for id, c := range q.count {
		if c > 0 {
			e.msgs[id].mark = mk
		}
	}
	for k, qu := range q.queues {
		for _, m := range qu[q.heads[k]:] {
			m.mark = mk
		}
	}
	for len(states) > 0 || len(edges) > 0 {
		if n := len(edges); n > 0 {
			ed := edges[n-1]
			edges = edges[:n-1]
			if l := ed.to; l.mark != mk {
				l.mark = mk
				states = append(states, l)
			}
			for _, m := range ed.sends {
				if m.mark == mk {
					continue
				}
				m.mark = mk
				if m.waitMark == mk { // m.waits no longer grows: m is sent
					edges = append(edges, m.waits...)
				}
			}
			continue
		}
		l := states[len(states)-1]
		states = states[:len(states)-1]
		for _, ed := range q.out(l) {
			if m := ed.m; m != nil && m.mark != mk {
				if m.waitMark != mk {
					m.waitMark, m.waits = mk, m.waits[:0]
				}
				m.waits = append(m.waits, ed)
				continue
			}
			edges = append(edges, ed)
		}
	}
	q.todo, q.taken = states, edges
	for _, t := range q.target {
		if t == nil {
			continue
		}
		ok := false
		for _, l := range t {
			ok = ok || l.mark == mk
		}
		if !ok {
			return false
		}
	}
	return true
}

func (q *lmcSearch) nodePart(i int) uint64 { return mix(q.cur[i].key ^ kNode*uint64(i+1)) }

// streamEntry is a stream message's part of the hash (its id names its
// link and place).
func streamEntry(m *lmcMsg) uint64 { return mix(kLink ^ uint64(m.id+1)<<8) }

// push puts stream message m at the end of its link's queue.
func (q *lmcSearch) push(m *lmcMsg) {
	k := int(m.env.from-1)*q.e.n + int(m.env.to-1)
	q.h += streamEntry(m)
	q.queues[k] = append(q.queues[k], m)
}

// lmcSaved is a link's queue that an incarnation start ended.
type lmcSaved struct {
	k    int
	q    []*lmcMsg
	head int32
}

// end ends every stream to or from node i (State.endStreams) and returns
// what they held.
func (q *lmcSearch) end(i int) []lmcSaved {
	var out []lmcSaved
	n := q.e.n
	for j := range n {
		ks := []int{i*n + j, j*n + i}
		if j == i {
			ks = ks[:1]
		}
		for _, k := range ks {
			if len(q.queues[k]) == 0 {
				continue
			}
			out = append(out, lmcSaved{k, q.queues[k], q.heads[k]})
			for _, m := range q.queues[k][q.heads[k]:] {
				q.h -= streamEntry(m)
			}
			q.queues[k], q.heads[k] = nil, 0
		}
	}
	return out
}

// unend puts back what end took.
func (q *lmcSearch) unend(saved []lmcSaved) {
	for _, sv := range saved {
		q.queues[sv.k], q.heads[sv.k] = sv.q, sv.head
		for _, m := range sv.q[sv.head:] {
			q.h += streamEntry(m)
		}
	}
}

func (q *lmcSearch) key() uint64 {
	return mix(q.h ^ uint64(q.dups)<<40 ^ uint64(q.fires)<<20)
}

func (q *lmcSearch) dfs() bool {
	k := q.key()
	if q.seen[k] {
		return false
	}
	q.seen[k] = true
	if q.left--; q.left < 0 {
		q.gaveUp = true
		return false
	}
	if q.e.work++; q.e.late() || q.e.yielded() {
		q.late = true
		return false
	}
	if q.done() {
		return true
	}
	if !q.possible() {
		return false
	}
	for _, mv := range q.moves() {
		q.do(&mv)
		q.path = append(q.path, mv)
		if q.dfs() {
			return true
		}
		q.path = q.path[:len(q.path)-1]
		q.undo(&mv)
		if q.gaveUp || q.late {
			return false
		}
	}
	return false
}

// do takes move mv: its node moves along the edge, the message it takes
// leaves the network (unless duplicated), and what it sends joins.
func (q *lmcSearch) do(mv *lmcMove) {
	ed := mv.ed
	i := int(ed.from.i)
	switch ed.ev.Kind {
	case Deliver:
		if mv.dup {
			q.dups++
		} else if !q.e.sys.keep {
			q.count[ed.m.id]--
			q.h -= mix(ed.m.env.hash)
		}
	case StreamIn:
		q.heads[int(ed.m.env.from-1)*q.e.n+i]++
		q.h -= streamEntry(ed.m)
	case Fire:
		q.fires++
	}
	if ed.start {
		mv.saved = q.end(i)
	}
	q.h -= q.nodePart(i)
	q.cur[i] = ed.to
	q.h += q.nodePart(i)
	for k, m := range ed.sends {
		switch {
		case m.ordered:
			q.push(m)
		case !q.e.sys.keep || q.count[m.id] == 0:
			q.count[m.id]++
			q.h += mix(m.env.hash)
			mv.added |= 1 << min(k, 63)
		}
	}
}

// undo takes move mv back.
func (q *lmcSearch) undo(mv *lmcMove) {
	ed := mv.ed
	i := int(ed.from.i)
	for k := len(ed.sends) - 1; k >= 0; k-- {
		m := ed.sends[k]
		switch {
		case m.ordered:
			l := int(m.env.from-1)*q.e.n + int(m.env.to-1)
			q.queues[l] = q.queues[l][:len(q.queues[l])-1]
			q.h -= streamEntry(m)
		case mv.added&(1<<min(k, 63)) != 0:
			q.count[m.id]--
			q.h -= mix(m.env.hash)
		}
	}
	mv.added = 0
	q.h -= q.nodePart(i)
	q.cur[i] = ed.from
	q.h += q.nodePart(i)
	if ed.start {
		q.unend(mv.saved)
		mv.saved = nil
	}
	switch ed.ev.Kind {
	case Deliver:
		if mv.dup {
			q.dups--
		} else if !q.e.sys.keep {
			q.count[ed.m.id]++
			q.h += mix(ed.m.env.hash)
		}
	case StreamIn:
		q.heads[int(ed.m.env.from-1)*q.e.n+i]--
		q.h += streamEntry(ed.m)
	case Fire:
		q.fires--
	}
}

// done reports whether every target node is at a target and, replayed
// with State.Apply and the crashes that end some of them, the execution
// reaches a state where goal holds (with no goal, reaching the targets
// is enough and nothing is replayed).
func (q *lmcSearch) done() bool {
	var crashes []Event
	for i, t := range q.target {
		if t == nil {
			continue
		}
		if !q.at(q.cur[i]) {
			return false
		}
		if q.cur[i].cMark == q.ep {
			crashes = append(crashes, Event{Kind: Crash, Node: q.e.sys.addrs[i]})
		}
	}
	if len(crashes) > 0 && !allows(q.e.o.Settings.MaxCrashes, len(crashes)-1) {
		return false
	}
	evs := append(events(q.path, len(crashes)), crashes...)
	if q.goal == nil && q.extra == nil {
		q.trace, q.final = evs, q.e.init
		return true
	}
	s, err, ok := q.e.replay(evs)
	if !ok || q.extra != nil && err == nil || q.goal != nil && !q.goal(s) {
		return false
	}
	q.trace, q.final, q.err = evs, s, err
	return true
}

// events are path's events, with room for more.
func events(path []lmcMove, more int) []Event {
	evs := make([]Event, 0, len(path)+more)
	for _, mv := range path {
		ev := mv.ed.ev
		if mv.dup {
			ev.Kind = Duplicate
		}
		evs = append(evs, ev)
	}
	return evs
}

// replay applies evs from the initial state; ok is false if one is not
// enabled or panics before the last. A panic of the last is err, with
// the state before it.
func (e *lmc) replay(evs []Event) (s *State, err error, ok bool) {
	s = e.init
	for k, ev := range evs {
		next, err := s.Apply(ev)
		var hp *HandlerPanic
		if errors.As(err, &hp) && k == len(evs)-1 {
			return next, err, true
		}
		if err != nil {
			return nil, nil, false
		}
		s = next
	}
	return s, nil, true
}

// Answers of lmcSearch.enabled besides a node index.
const (
	lmcEnabled = -1
	lmcDead    = -2
)

// enabled says whether ed can be taken now (lmcEnabled), never can
// before its node moves (lmcDead), or waits for a message from the node
// it returns.
func (q *lmcSearch) enabled(ed *lmcEdge) int {
	ev := ed.ev
	i := int(ed.from.i)
	switch ev.Kind {
	case Deliver:
		if q.count[ed.m.id] > 0 {
			return lmcEnabled
		}
		if ev.Env.from > 0 {
			return int(ev.Env.from) - 1
		}
	case StreamIn:
		j := int(ev.Env.from) - 1
		k := j*q.e.n + i
		if qu := q.queues[k]; int(q.heads[k]) < len(qu) {
			if qu[q.heads[k]] == ed.m {
				return lmcEnabled
			}
			return lmcDead
		}
		return j
	case Fire:
		ts := q.cur[i].timers
		for j, t := range ts {
			if t.hash == ev.Timer {
				if timerReady(ts, j) && allows(q.e.o.Settings.MaxTimerFires, q.fires) {
					return lmcEnabled
				}
				break
			}
		}
	}
	return lmcDead
}

// moves are the events to try now: those enabled of the nodes in the
// smallest set, over the target nodes not at a target, that contains the
// node and every node one of its members waits for (when every target
// node is at a target, the union of those sets). An execution to the
// targets takes one of these first, up to reordering (see lmcSearch).
func (q *lmcSearch) moves() []lmcMove {
	var best []int
	for i, t := range q.target {
		if t == nil || q.at(q.cur[i]) {
			continue
		}
		if set := q.closure(nil, i); best == nil || len(set) < len(best) {
			best = set
		}
		if len(best) == 1 {
			break
		}
	}
	if best == nil {
		for i, t := range q.target {
			if t != nil && !containsInt(best, i) {
				best = q.closure(best, i)
			}
		}
	}
	var out []lmcMove
	set := q.e.o.Settings
	for _, k := range best {
		for _, ed := range q.out(q.cur[k]) {
			if q.enabled(ed) != lmcEnabled {
				continue
			}
			out = append(out, lmcMove{ed: ed})
			if ed.ev.Kind == Deliver && (ed.m.uses > 1 || ed.to == ed.from) &&
				allows(set.MaxDuplicates, q.dups) && !q.e.sys.keep {
				out = append(out, lmcMove{ed: ed, dup: true})
			}
		}
	}
	return out
}

// streamsWith notes that allowed edge ed's node and the nodes it streams
// with are stream peers (both ways).
func (q *lmcSearch) streamsWith(ed *lmcEdge) {
	if q.peers == nil {
		q.peers = make([][]int, q.e.n)
	}
	i := int(ed.from.i)
	add := func(m *lmcMsg, j int32) {
		if m.ordered && !containsInt(q.peers[i], int(j)) {
			q.peers[i] = append(q.peers[i], int(j))
			q.peers[j] = append(q.peers[j], i)
		}
	}
	if ed.m != nil {
		add(ed.m, ed.m.env.from-1)
	}
	for _, m := range ed.sends {
		add(m, m.env.to-1)
	}
}

// starting reports whether node i may still take an allowed edge that
// starts an incarnation.
func (q *lmcSearch) starting(i int) bool { return q.starts != nil && q.cur[i].gen < q.starts[i] }

// closure adds to set node i and every node a member waits for,
// transitively. A start ends streams, so it does not commute with its
// peers' stream events: with a node that may still start, the set also
// takes the nodes it streams with, and with a node, its stream peers
// that may still start.
func (q *lmcSearch) closure(set []int, i int) []int {
	set = append(set, i)
	for k := 0; k < len(set); k++ {
		a := set[k]
		for _, ed := range q.out(q.cur[a]) {
			if j := q.enabled(ed); j >= 0 && !containsInt(set, j) {
				set = append(set, j)
			}
		}
		if q.starts == nil {
			continue
		}
		for _, b := range q.peers[a] {
			if (q.starting(a) || q.starting(b)) && !containsInt(set, b) {
				set = append(set, b)
			}
		}
	}
	return set
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
