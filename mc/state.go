// Package mc runs Amalgam's protocol nodes in simulation: a state is every
// node, the network and every pending timer, and events move from one
// state to the next. Randomized simulation (Simulate) walks one path; the
// model checker (Search) explores the graph of states built from the same
// pieces.
package mc

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/amalgam-store/amalgam/msg"
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

// Hash identifies the envelope by sender, receiver and content. It is
// stable across runs and processes (traces name messages by it).
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

// Budget counts the failure events (and timer firings) taken on the path
// to a state. Settings bound them per path; the counts are part of the
// state, so two states that differ only in the budget left are distinct.
type Budget struct {
	Drops, Duplicates, Crashes, Fires int
}

// State is one global state. States are immutable once built: Apply makes
// a new state that shares every node, queue and timer list it did not touch.
type State struct {
	sys     *system // fixed for a run: the addresses
	nodes   []node.Node
	nhash   []uint64 // cached node hashes, computed once when the node is made
	crashed []bool
	timers  [][]pendingTimer // per node, in the order they were set
	net     []Envelope       // unordered messages, a multiset
	netSum  uint64           // order-independent hash of net, kept incrementally
	streams []stream         // sorted by link
	used    Budget
	// returns lists, in order, the client (index into sys.clients) of every
	// reply a workload client accepted. It is the real-time order of the
	// run's returns, which a closed-loop client's invocations follow.
	returns []uint8
	fp      uint64
}

// system is what all states of one run share.
type system struct {
	addrs   []node.Addr
	index   map[node.Addr]int
	clients []int // node indices of the clients (nodes with Replies)
	observe func(e Envelope, ordered bool)
	// cloneLocks serialise Clone calls on one node value: a node's Clone
	// may write to the original (erasure.Blocks.Clone does), and workers
	// share nodes across states.
	cloneLocks [64]sync.Mutex
}

// replier is a workload client: a node that records the replies it took.
type replier interface {
	node.Node
	Replies() []msg.Reply
}

// NewState builds the initial state: nodes by address, each Init'ed in
// address order.
func NewState(nodes map[node.Addr]node.Node) *State {
	sys := &system{index: map[node.Addr]int{}}
	for a := range nodes {
		sys.addrs = append(sys.addrs, a)
	}
	slices.Sort(sys.addrs)
	s := &State{sys: sys, nodes: make([]node.Node, len(sys.addrs)), nhash: make([]uint64, len(sys.addrs)),
		crashed: make([]bool, len(sys.addrs)), timers: make([][]pendingTimer, len(sys.addrs))}
	for i, a := range sys.addrs {
		sys.index[a] = i
		s.nodes[i] = nodes[a]
		if _, ok := nodes[a].(replier); ok {
			sys.clients = append(sys.clients, i)
		}
	}
	if len(sys.clients) > 255 {
		panic("mc: at most 255 clients")
	}
	for i, a := range sys.addrs {
		ctx := s.context(a)
		s.nodes[i].Init(ctx)
		ctx.flush()
	}
	for i := range s.nodes {
		s.nhash[i] = s.nodes[i].Hash()
	}
	s.fp = s.fingerprint()
	return s
}

// Observe calls fn for every message any node sends from now on, in this
// state and every state built from it (for test oracles that watch the
// wire, such as "no request executes twice"). Not for concurrent searches.
func (s *State) Observe(fn func(e Envelope, ordered bool)) { s.sys.observe = fn }

// Node returns the node at a, or nil. Callers must only read it.
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

// Used is the failure budget spent on the path to s.
func (s *State) Used() Budget { return s.used }

// Returns is the real-time order of the clients' returns: for each reply
// any client accepted, in order, the client's address.
func (s *State) Returns() []node.Addr {
	out := make([]node.Addr, len(s.returns))
	for i, c := range s.returns {
		out[i] = s.sys.addrs[s.sys.clients[c]]
	}
	return out
}

// Fingerprint is the state's hash: node hashes, crash flags, the network
// multiset (order-independent), the streams, the timers, the budget used
// and the order of returns. The visited set of a search holds these.
func (s *State) Fingerprint() uint64 { return s.fp }

// Quiet reports whether no message is in flight on any stream or the
// unordered network.
func (s *State) Quiet() bool {
	return len(s.net) == 0 && len(s.streams) == 0
}

func (s *State) copyState() *State {
	c := *s
	return &c
}

// mix is a 64-bit finalizer (splitmix64): the network's multiset hash is
// the sum of mix(envelope hash), so duplicates count and order does not.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func (s *State) fingerprint() uint64 {
	var h node.Hasher
	h.Reset()
	for i, nh := range s.nhash {
		h.Uint64(nh)
		h.Bool(s.crashed[i])
		h.Int(len(s.timers[i]))
		for _, t := range s.timers[i] {
			h.Uint64(t.hash)
			h.Uint64(uint64(t.Min))
			h.Uint64(uint64(t.Max))
		}
	}
	h.Int(len(s.net))
	h.Uint64(s.netSum)
	h.Int(len(s.streams))
	for _, q := range s.streams {
		h.String(string(q.link.From))
		h.String(string(q.link.To))
		h.Int(len(q.msgs))
		for _, e := range q.msgs {
			h.Uint64(e.hash)
		}
	}
	h.Int(s.used.Drops)
	h.Int(s.used.Duplicates)
	h.Int(s.used.Crashes)
	h.Int(s.used.Fires)
	h.Int(len(s.returns))
	for _, c := range s.returns {
		h.Uint64(uint64(c))
	}
	return h.Sum()
}

func (s *State) findStream(l link) (int, bool) {
	return slices.BinarySearchFunc(s.streams, l, func(q stream, l link) int {
		if q.link.From != l.From {
			return strings.Compare(string(q.link.From), string(l.From))
		}
		return strings.Compare(string(q.link.To), string(l.To))
	})
}

func (s *State) String() string {
	return fmt.Sprintf("state{%d nodes, %d messages, %d streams, fp %016x}", len(s.nodes), len(s.net), len(s.streams), s.fp)
}
