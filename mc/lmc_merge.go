package mc

import "slices"

// The causal merge (the LMC paper's greedy replay): a local state reached
// by edge ed from l, taking message m, is reachable if the execution found
// to l (its witness) leaves m in flight, or if it and the one found to m's
// sender, followed by the sender's edge, can be run together. Each node follows the longer of its
// two paths (they must agree where both go), then the new edge; the
// moves are scheduled greedily, any node whose next move is enabled taking
// it. A schedule that gets stuck proves nothing: the DFS of lmcSearch
// decides then. Executions found this way are ordinary lmcSearch paths,
// checked by the same rules (multiset, streams, budgets).

// lmcWitnesses bounds the executions kept per local state, and
// lmcMergeTries the combinations of them one merge tries.
const (
	lmcWitnesses  = 4
	lmcMergeTries = 16
)

// confirm records path as an execution taking l's node to l
// (a walk's path is copied if kept).
func (e *lmc) confirm(l *lmcLocal, path []lmcMove) {
	l.confirmed = true
	per := make([]int, e.n)
	for _, mv := range path {
		if mv.ed.ev.Kind != Crash {
			per[mv.ed.from.i]++
		}
	}
	for i, c := range per {
		e.stats.Confirmed[i] = max(e.stats.Confirmed[i], c)
	}
	e.stats.Longest = max(e.stats.Longest, len(path))
	if len(l.wits) >= lmcWitnesses {
		return
	}
	if len(l.wits) == 0 && !l.crashed {
		e.known = append(e.known, l)
	}
	l.wits = append(l.wits, slices.Clone(path))
}

// witnesses are the executions known to l (the initial state's: the
// empty one).
func (l *lmcLocal) witnesses() [][]lmcMove {
	if l.parent == nil {
		return [][]lmcMove{nil}
	}
	return l.wits
}

// mergeInto looks for an execution to l by causal merge over its incoming
// edges from confirmed states and the confirmed senders of their messages.
func (e *lmc) mergeInto(l *lmcLocal) []lmcMove {
	tries := 0
	for _, ed := range l.ins {
		if p := e.mergeEdge(ed, &tries); p != nil || tries >= lmcMergeTries {
			return p
		}
	}
	return nil
}

// mergeEdge tries the causal merge for edge ed (counting tries).
func (e *lmc) mergeEdge(ed *lmcEdge, tries *int) []lmcMove {
	if ed.ev.Kind == Crash {
		return nil
	}
	for _, w := range ed.from.witnesses() {
		// the execution to ed.from alone, if it leaves ed's message in
		// flight (or ed takes none)
		*tries++
		if p := e.merge([][]lmcMove{w}, ed, nil); p != nil || *tries >= lmcMergeTries {
			return p
		}
		if ed.m == nil {
			continue
		}
		for _, pr := range ed.m.producers {
			for _, v := range pr.from.witnesses() {
				*tries++
				if p := e.merge([][]lmcMove{w, v}, ed, pr); p != nil || *tries >= lmcMergeTries {
					return p
				}
			}
		}
	}
	return nil
}

// merge runs the bases together, each node following the longest of its
// paths in them, with sender's edge after its node's path and last after
// its node's (nil: none); it returns the execution, or nil if the paths
// disagree or the greedy schedule gets stuck.
func (e *lmc) merge(bases [][]lmcMove, last, sender *lmcEdge) []lmcMove {
	seqs := make([][]lmcMove, e.n)
	total := 0
	for _, b := range bases {
		if !e.fold(seqs, b, &total) {
			return nil
		}
	}
	for _, ed := range []*lmcEdge{sender, last} {
		if ed == nil {
			continue
		}
		i := ed.from.i
		switch {
		case e.endsAt(seqs[i], ed.from):
			seqs[i] = append(seqs[i], lmcMove{ed: ed})
			total++
		case ed != sender || !slices.ContainsFunc(seqs[i], func(mv lmcMove) bool { return mv.ed == ed }):
			return nil
		}
	}
	return e.schedule(seqs, total)
}

// fold merges base's node paths into seqs: where both have a path, one
// must be a prefix of the other, and the longer stays.
func (e *lmc) fold(seqs [][]lmcMove, base []lmcMove, total *int) bool {
	per := make([][]lmcMove, e.n)
	for _, mv := range base {
		per[mv.ed.from.i] = append(per[mv.ed.from.i], mv)
	}
	for i, p := range per {
		s := seqs[i]
		short, long := s, p
		if len(p) < len(s) {
			short, long = p, s
		}
		for k := range short {
			if short[k].ed != long[k].ed {
				return false
			}
		}
		*total += len(long) - len(s)
		seqs[i] = long
	}
	return true
}

// endsAt reports whether node path p ends at l.
func (e *lmc) endsAt(p []lmcMove, l *lmcLocal) bool {
	if len(p) == 0 {
		return e.locals[l.i][0] == l
	}
	return p[len(p)-1].ed.to == l
}

// schedule runs the node paths seqs greedily from the initial state:
// any node whose next move is enabled takes it. A delivery uses a
// duplicate when more of the remaining moves take the message than copies
// are in flight and the budget allows.
func (e *lmc) schedule(seqs [][]lmcMove, total int) []lmcMove {
	q := e.initial()
	need := map[int32]int32{}
	for _, s := range seqs {
		for _, mv := range s {
			if mv.ed.ev.Kind == Deliver {
				need[mv.ed.m.id]++
			}
		}
	}
	set := e.o.Settings
	at := make([]int, e.n)
	path := make([]lmcMove, 0, total)
	for len(path) < total {
		moved := false
		for i, s := range seqs {
			for at[i] < len(s) {
				mv := lmcMove{ed: s[at[i]].ed}
				if mv.ed.ev.Kind == Crash || q.enabled(mv.ed) != lmcEnabled {
					break
				}
				if mv.ed.ev.Kind == Deliver {
					id := mv.ed.m.id
					mv.dup = !e.sys.keep && need[id] > q.count[id] && allows(set.MaxDuplicates, q.dups)
					need[id]--
				}
				q.do(&mv)
				path = append(path, mv)
				at[i]++
				moved = true
			}
		}
		if !moved {
			return nil
		}
	}
	return path
}

// mergeCombo tries the causal merge for candidate c: executions known to
// members of its classes, one per node read, run together so that each
// of those nodes ends in its member; the execution found is replayed
// with State.Apply and kept if goal holds there.
func (e *lmc) mergeCombo(c *lmcCandidate, goal func(*State) bool) ([]Event, *State) {
	ws := make([][]*lmcLocal, len(c.combo)) // per class: members with a witness
	for k, cl := range c.combo {
		for _, l := range cl.members {
			if l.confirmed && !l.crashed && len(ws[k]) < 2 {
				ws[k] = append(ws[k], l)
			}
		}
		if len(ws[k]) == 0 {
			return nil, nil
		}
	}
	at := make([]int, len(ws))
	for tries := 0; tries < lmcMergeTries; tries++ {
		bases := make([][]lmcMove, len(ws))
		for k, w := range ws {
			bases[k] = w[at[k]].witnesses()[0]
		}
		if evs, s := e.mergeTo(bases, ws, at, goal); s != nil {
			return evs, s
		}
		k := len(at) - 1 // next, as an odometer
		for ; k >= 0; k-- {
			if at[k]++; at[k] < len(ws[k]) {
				break
			}
			at[k] = 0
		}
		if k < 0 {
			break
		}
	}
	return nil, nil
}

// mergeTo merges bases and, if every node read ends in its chosen member
// (ws[k][at[k]]) and goal holds on the replayed execution, returns it.
func (e *lmc) mergeTo(bases [][]lmcMove, ws [][]*lmcLocal, at []int, goal func(*State) bool) ([]Event, *State) {
	seqs := make([][]lmcMove, e.n)
	total := 0
	for _, b := range bases {
		if !e.fold(seqs, b, &total) {
			return nil, nil
		}
	}
	for k, w := range ws {
		if l := w[at[k]]; !e.endsAt(seqs[l.i], l) {
			return nil, nil
		}
	}
	path := e.schedule(seqs, total)
	if path == nil {
		return nil, nil
	}
	evs := events(path, 0)
	s, err, ok := e.replay(evs)
	if !ok || err != nil || !goal(s) {
		return nil, nil
	}
	e.stats.Merged++
	e.stats.Longest = max(e.stats.Longest, len(evs))
	return evs, s
}
