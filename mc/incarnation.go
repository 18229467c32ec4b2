package mc

import (
	"slices"

	"github.com/amalgam-store/amalgam/node"
)

// startsAt reports whether e starts a new incarnation at its receiver
// (node i): it is then delivered even to a crashed node.
func (b *builder) startsAt(i int, m node.Message) bool { return b.n.startsAt(i, m) }

func (s *State) startsAt(i int, m node.Message) bool {
	return i >= 0 && starts(s.sys.addrs[i], s.nodes[i].nd, m)
}

// starts reports whether m starts a new incarnation of nd, at a.
func starts(a node.Addr, nd node.Node, m node.Message) bool {
	st, ok := m.(node.Starter)
	if !ok {
		return false
	}
	inc, ok := st.StartsIncarnation(a)
	cur, known := nd.(node.Incarnated)
	return ok && known && cur.Incarnation() < inc
}

// startIncarnation ends the incarnation of node i when m starts a newer
// one there: a crashed node comes back, and the old incarnation's timers
// and streams end. The handler then builds the new incarnation's state.
func (b *builder) startIncarnation(i int, m node.Message) {
	if !b.startsAt(i, m) {
		return
	}
	a := b.n.sys.addrs[i]
	b.touch(i)
	if b.n.crashed[i] {
		b.n.crashed = slices.Clone(b.n.crashed)
		b.n.crashed[i] = false
	}
	b.ownTimers()
	b.n.timers[i] = nil
	b.endStreams(a)
}
