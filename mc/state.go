// Package mc runs Amalgam's protocol nodes in simulation: a state is every
// node, the network and every pending timer, and events move from one
// state to the next. Randomized simulation (Simulate) walks one path; the
// model checker searches the graph of states built from the same pieces.
package mc

import (
	"fmt"
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// Envelope is a message in flight.
type Envelope struct {
	From, To node.Addr
	Msg      node.Message
	hash     uint64
}

func newEnvelope(from, to node.Addr, m node.Message) Envelope {
	h := node.NewHasher()
	h.String(string(from))
	h.String(string(to))
	m.Hash(h)
	return Envelope{From: from, To: to, Msg: m, hash: h.Sum()}
}

// Hash identifies the envelope by sender, receiver and content.
func (e Envelope) Hash() uint64 { return e.hash }

// pendingTimer is a timer set by a node and not yet fired.
type pendingTimer struct {
	T        node.Timer
	Min, Max time.Duration
	hash     uint64
}

type link struct{ From, To node.Addr }

// stream is the FIFO queue of one ordered link. Queues are never modified
// in place: states share them.
type stream struct {
	link link
	msgs []Envelope
}

// State is one global state. States are immutable once built: Apply makes
// a new state that shares every node, queue and timer list it did not touch.
type State struct {
	sys     *system // fixed for a run: the addresses
	nodes   []node.Node
	crashed []bool
	timers  [][]pendingTimer // per node, in the order they were set
	net     []Envelope       // unordered messages, a multiset
	streams []stream         // sorted by link
}

// system is what all states of one run share.
type system struct {
	addrs   []node.Addr
	index   map[node.Addr]int
	observe func(e Envelope, ordered bool)
}

// NewState builds the initial state: nodes by address, each Init'ed in
// address order.
func NewState(nodes map[node.Addr]node.Node) *State {
	sys := &system{index: map[node.Addr]int{}}
	for a := range nodes {
		sys.addrs = append(sys.addrs, a)
	}
	slices.Sort(sys.addrs)
	s := &State{sys: sys, nodes: make([]node.Node, len(sys.addrs)),
		crashed: make([]bool, len(sys.addrs)), timers: make([][]pendingTimer, len(sys.addrs))}
	for i, a := range sys.addrs {
		sys.index[a] = i
		s.nodes[i] = nodes[a]
	}
	for i, a := range sys.addrs {
		ctx := s.context(a)
		s.nodes[i].Init(ctx)
		ctx.flush()
	}
	return s
}

// Observe calls fn for every message any node sends from now on, in this
// state and every state built from it (for test oracles that watch the
// wire, such as "no request executes twice").
func (s *State) Observe(fn func(e Envelope, ordered bool)) { s.sys.observe = fn }

// Node returns the node at a, or nil.
func (s *State) Node(a node.Addr) node.Node {
	if i, ok := s.sys.index[a]; ok {
		return s.nodes[i]
	}
	return nil
}

// Addrs lists the nodes' addresses in order.
func (s *State) Addrs() []node.Addr { return s.sys.addrs }

// Network is the multiset of unordered messages in flight.
func (s *State) Network() []Envelope { return s.net }

// StreamMessages calls fn for every message queued on an ordered stream.
func (s *State) StreamMessages(fn func(Envelope)) {
	for _, q := range s.streams {
		for _, e := range q.msgs {
			fn(e)
		}
	}
}

// Crashed reports whether the node at a has crashed.
func (s *State) Crashed(a node.Addr) bool { return s.crashed[s.sys.index[a]] }

// Quiet reports whether no message is in flight on any stream or the
// unordered network.
func (s *State) Quiet() bool {
	return len(s.net) == 0 && len(s.streams) == 0
}

func (s *State) copyState() *State {
	c := *s
	return &c
}

func (s *State) findStream(l link) (int, bool) {
	return slices.BinarySearchFunc(s.streams, l, func(q stream, l link) int {
		if q.link.From != l.From {
			return cmpStr(string(q.link.From), string(l.From))
		}
		return cmpStr(string(q.link.To), string(l.To))
	})
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *State) String() string {
	return fmt.Sprintf("state{%d nodes, %d messages, %d streams}", len(s.nodes), len(s.net), len(s.streams))
}
