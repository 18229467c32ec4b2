package mc

import "sync"

// consequence is the table of consequence prediction (CrystalBall,
// Yabandeh et al., NSDI 2009, figure 5): per node, the local states whose
// local actions a search has explored. Local actions are the events a
// node starts on its own: timer firings, and the crashes and restarts of
// Settings. Deliveries, drops and duplicates of messages are always
// explored. A node's local actions are explored only in the first state
// where the node (its state, crash flag and timers) is seen, so the
// interleavings of independent chains of events are not: a heuristic
// that finds violations deeper within a budget, not an exhaustive search.
type consequence struct {
	mu   sync.Mutex
	seen map[[2]uint64]bool // (node index, nodePart)
}

func newConsequence() *consequence { return &consequence{seen: map[[2]uint64]bool{}} }

func local(k EventKind) bool { return k == Fire || k == Crash || k == Restart }

// filter drops from evs, the events enabled in s, the local actions of
// nodes whose local state was explored in another state.
func (c *consequence) filter(s *State, evs []Event) []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	mine := map[[2]uint64]bool{} // claimed in this state
	out := evs[:0]
	for _, e := range evs {
		if local(e.Kind) {
			i := s.sys.index[e.Node]
			k := [2]uint64{uint64(i), s.nodePart(i)}
			if c.seen[k] && !mine[k] {
				continue
			}
			mine[k] = true
		}
		out = append(out, e)
	}
	for k := range mine {
		c.seen[k] = true
	}
	return out
}
