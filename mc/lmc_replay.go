package mc

import "slices"

// replayer is LMC's a-posteriori check: a greedy global execution of
// per-node event sequences. The fixed nodes run exactly their sequences;
// every other node runs a prefix of one of its local paths, chosen and
// lengthened only when a fixed or chosen node waits for a message it
// sends. A node's next event stays enabled whatever other nodes do (only
// the node consumes its messages, streams and timers), so taking any
// enabled event first loses no execution.
type replayer struct {
	e     *lmc
	s     *State
	seq   [][]Event
	fixed []bool
	pos   []int
	trace []Event
}

// replayTries bounds the choices of paths for nodes that are not fixed
// one check tries.
const replayTries = 32

// replay returns the execution and the state it reaches, or a nil state
// when it finds none. err is a handler panic that ends the execution.
func (e *lmc) replay(fixed map[int][]Event) ([]Event, *State, error) {
	r := &replayer{e: e, s: e.init, seq: make([][]Event, e.n), fixed: make([]bool, e.n), pos: make([]int, e.n)}
	for i, q := range fixed {
		r.seq[i], r.fixed[i] = q, true
	}
	tries := replayTries
	trace, final, err := r.run(&tries)
	if final != nil {
		e.stats.Longest = max(e.stats.Longest, len(trace))
	}
	return trace, final, err
}

// run takes enabled events while there are; when the nodes wait, it
// tries each way to lengthen a node that is not fixed, in turn.
func (r *replayer) run(tries *int) ([]Event, *State, error) {
	for {
		progressed, done := false, true
		for i := range r.seq {
			for r.pos[i] < len(r.seq[i]) {
				ev, ok := r.enabled(i)
				if !ok {
					break
				}
				next, err := r.s.Apply(ev)
				r.trace = append(r.trace, ev)
				if err != nil {
					if r.fixed[i] && r.pos[i] == len(r.seq[i])-1 {
						return r.trace, r.s, err
					}
					return nil, nil, nil
				}
				r.s, progressed = next, true
				r.pos[i]++
			}
			done = done && r.pos[i] == len(r.seq[i])
		}
		if done {
			return r.trace, r.s, nil
		}
		if progressed {
			continue
		}
		for _, x := range r.extensions() {
			if *tries <= 0 {
				break
			}
			*tries--
			c := &replayer{e: r.e, s: r.s, seq: slices.Clone(r.seq), fixed: r.fixed, pos: slices.Clone(r.pos), trace: slices.Clip(r.trace)}
			c.seq[x.node] = x.seq
			if tr, final, err := c.run(tries); final != nil {
				return tr, final, err
			}
		}
		return nil, nil, nil
	}
}

// enabled is node i's next event as a global event, if it is enabled.
func (r *replayer) enabled(i int) (Event, bool) {
	ev, s, set := r.seq[i][r.pos[i]], r.s, r.e.o.Settings
	switch ev.Kind {
	case Deliver:
		c := countEnv(s.net, ev.Env.hash)
		if c == 0 {
			return ev, false
		}
		// Keep a copy in flight if the sequence takes the message again.
		need := 0
		for _, x := range r.seq[i][r.pos[i]:] {
			if x.Kind == Deliver && x.Env.hash == ev.Env.hash {
				need++
			}
		}
		if need > c && allows(set.MaxDuplicates, s.used.Duplicates) {
			ev.Kind = Duplicate
		}
		return ev, true
	case StreamIn:
		qi, ok := s.findStream(link{ev.Env.From, ev.Env.To})
		return ev, ok && s.streams[qi].msgs[0].hash == ev.Env.hash && !s.crashed[i]
	case Fire:
		j := slices.IndexFunc(s.timers[i], func(t pendingTimer) bool { return t.hash == ev.Timer })
		return ev, j >= 0 && timerReady(s.timers[i], j) && allows(set.MaxTimerFires, s.used.Fires)
	case Crash:
		return ev, !s.crashed[i] && allows(set.MaxCrashes, s.used.Crashes)
	}
	return ev, false
}

type extension struct {
	node int
	seq  []Event
}

// extensions are the ways to lengthen the sequence of a node that is not
// fixed so that it sends a message a waiting node needs next.
func (r *replayer) extensions() []extension {
	var out []extension
	for i := range r.seq {
		if r.pos[i] == len(r.seq[i]) {
			continue
		}
		ev := r.seq[i][r.pos[i]]
		j := int(ev.Env.from) - 1
		if ev.Kind != Deliver && ev.Kind != StreamIn || j < 0 || r.fixed[j] {
			continue
		}
		var m *lmcMsg
		if ev.Kind == Deliver {
			m = r.e.net[ev.Env.hash]
		} else {
			n := int32(0) // the message's place on its stream
			for _, x := range r.seq[i][:r.pos[i]] {
				if x.Kind == StreamIn && x.Env.from == ev.Env.from {
					n++
				}
			}
			ms := r.e.stream[streamPos{int32(j), int32(i), n}]
			if k := slices.IndexFunc(ms, func(x *lmcMsg) bool { return x.env.hash == ev.Env.hash }); k >= 0 {
				m = ms[k]
			}
		}
		if m == nil {
			continue
		}
		for _, p := range m.producers {
			if p.at == nil {
				continue
			}
			for _, q := range p.at.paths(4) {
				q = append(slices.Clip(q), p.ev)
				if len(q) > len(r.seq[j]) && prefix(r.seq[j], q) {
					out = append(out, extension{j, q})
				}
			}
		}
	}
	return out
}

// prefix reports whether a's events begin b.
func prefix(a, b []Event) bool {
	for k, x := range a {
		y := b[k]
		if x.Kind != y.Kind || x.Env.hash != y.Env.hash || x.Timer != y.Timer || x.Node != y.Node {
			return false
		}
	}
	return true
}
