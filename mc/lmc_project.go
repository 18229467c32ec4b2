package mc

import "github.com/amalgam-store/amalgam/node"

// Projection is what a predicate reads of the nodes. Local model checking
// (LMC) combines local states into system states only for predicates,
// only from the nodes a predicate reads, and one system state per
// distinct tuple of projected values.
type Projection struct {
	// Reads reports whether the predicate reads the node at a (n is its
	// initial value); nil: the clients (see Client).
	Reads func(a node.Addr, n node.Node) bool
	// Key hashes what the predicate reads of n (nil: n's hash).
	Key func(n node.Node) uint64
	// Global: the predicate also reads what a combination of local states
	// does not give (messages in flight, the order of returns). LMC then
	// judges every combination on the global state its a-posteriori check
	// replays, not on the combination.
	Global bool
}

// Projected is p reading only what pr says.
func (p Predicate) Projected(pr Projection) Predicate { p.Reads = &pr; return p }

// clientsGlobal is Linearizable's projection: the clients, and the order
// of their returns (global).
var clientsGlobal = Projection{Global: true}

// allNodes is the projection of a predicate that declares none.
var allNodes = Projection{Reads: func(node.Addr, node.Node) bool { return true }}

func (pr *Projection) key(l *lmcLocal) uint64 {
	k := l.in.h
	if pr.Key != nil {
		k = pr.Key(l.in.nd)
	}
	if l.crashed {
		k = mix(k ^ kCrashed)
	}
	return k
}
