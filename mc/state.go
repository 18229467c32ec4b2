// Package mc is a model checker for systems of node.Node values: a state is
// every node, the network, the ordered streams and every pending timer,
// and events move from one state to the next. Randomized simulation
// (Simulate) walks one path; Search explores the graph of states built
// from the same pieces. It knows nothing of the system it checks: the
// system supplies its clients' operations (Client), what must hold
// (Predicate), its setups (Scenario) and how its values read in traces
// (node.Describer). The examples/ directory shows two small systems.
package mc

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// Envelope is a message in flight.
type Envelope struct {
	From, To node.Addr
	Msg      node.Message
	hash     uint64
	// from and to are the node indices of From and To plus one (0: not a
	// node of the run), filled in when a node of the run sends it.
	from, to int32
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
	link  link
	lh    uint64 // hash of the link (by node indices)
	msgs  []Envelope
	arena bool // msgs is in a scratch arena (see scratch.queue)
}

// Budget counts the failure events (and timer firings) taken on the path
// to a state. Settings bound them per path; the counts are part of the
// state, so two states that differ only in the budget left are distinct.
type Budget struct {
	Drops, Duplicates, Crashes, Fires, Restarts, Partitions int
}

// State is one global state. States are immutable once built: Apply makes
// a new state that shares every node, queue and timer list it did not touch.
//
// The fingerprint is kept incrementally: it combines sums of per-part
// hashes (one per node with its crash flag and timers, one per stream,
// one per unordered message), the budget and a chained hash of the return
// order, so an event only rehashes the parts it changes.
type State struct {
	sys     *system // fixed for a run: the addresses
	nodes   []*instance
	crashed []bool
	timers  [][]pendingTimer // per node, in the order they were set
	net     []Envelope       // unordered messages, a multiset
	streams []stream         // sorted by link
	used    Budget
	// cut is the node index plus one whose links are cut (0: none), for
	// cutLeft more events (Settings.MaxPartitions).
	cut, cutLeft int32
	// returns lists, in order, the client (index into sys.clients) of every
	// operation a client completed. It is the real-time order of the
	// run's returns, which a closed-loop client's invocations follow.
	returns []uint8

	nodeSum   uint64 // sum of nodePart over the nodes
	netSum    uint64 // sum of mix(envelope hash) over net
	streamSum uint64 // sum of streamPart over the streams
	retHash   uint64 // chained hash of returns
	fp        uint64
}

// system is what all states of one run share.
type system struct {
	addrs    []node.Addr
	index    map[node.Addr]int
	clients  []int // node indices of the clients (see Client)
	servers  []int // node indices of the other nodes
	clientOf func(node.Node) (Client, bool)
	observe  func(e Envelope, ordered bool)
	// cloneLocks serialise Clone calls on one node value: a node's Clone
	// may write to the original (erasure.Blocks.Clone does), and workers
	// share nodes across states.
	cloneLocks [64]sync.Mutex
	// memo holds handler results by (node, node hash, event): nodes are
	// deterministic, so a node in the same state handling the same message
	// or timer always makes the same new node and effects. noMemo turns it
	// off (tests compare both).
	memo   *Cache[memoKey, *effect]
	noMemo bool
	// restore makes a fresh node to restore a crashed one into (see
	// Restartable); nil: crashes are for good.
	restore func(a node.Addr, crashed node.Node) node.Persistent
	corrupt func(a node.Addr, disk map[string][]byte) // see CorruptDisk
	behind  func(node.Addr, node.Message) bool        // see PersistBehindOn
	early   func(node.Addr, node.Message) bool        // see SendsBeforeDurableOn
	lag     []bool                                    // by node index: see LagOn
	keep    bool                                      // see KeepDelivered
	sym     *symmetry                                 // see Symmetric
}

// instance is one node value as states hold it: the node, its hash
// (computed once, before the node is shared) and the predicates' view of
// it, built on first use (see View). Instances are shared between states.
type instance struct {
	nd   node.Node
	h    uint64
	view atomic.Pointer[viewBox]
	// prev is the node before the handler that made nd, and its hash,
	// kept only in systems set PersistBehind.
	prev  node.Node
	prevH uint64
	// disk is the node as it last was durable, when it runs ahead of its
	// disk (State.LagOn), and held the unordered messages its handlers
	// sent since, which wait for its disk; nil when the disk is current.
	disk *instance
	held []Envelope
}

type viewBox struct{ v any }

// NewState builds the initial state: nodes by address, each Init'ed in
// address order. Nodes that implement Client are the run's clients.
func NewState(nodes map[node.Addr]node.Node) *State { return NewStateClients(nodes, nil) }

// NewStateClients is NewState for systems whose client nodes do not
// implement Client themselves: clientOf returns a node's Client view (it
// is called on every new value of a client node, so it should not
// allocate). A nil clientOf means NewState's rule.
func NewStateClients(nodes map[node.Addr]node.Node, clientOf func(node.Node) (Client, bool)) *State {
	if clientOf == nil {
		clientOf = func(n node.Node) (Client, bool) { c, ok := n.(Client); return c, ok }
	}
	sys := &system{index: map[node.Addr]int{}, memo: NewCache[memoKey, *effect](memoEntries), clientOf: clientOf}
	for a := range nodes {
		sys.addrs = append(sys.addrs, a)
	}
	slices.Sort(sys.addrs)
	s := &State{sys: sys, nodes: make([]*instance, len(sys.addrs)),
		crashed: make([]bool, len(sys.addrs)), timers: make([][]pendingTimer, len(sys.addrs))}
	for i, a := range sys.addrs {
		sys.index[a] = i
		s.nodes[i] = &instance{nd: nodes[a]}
		if _, ok := clientOf(nodes[a]); ok {
			sys.clients = append(sys.clients, i)
		} else {
			sys.servers = append(sys.servers, i)
		}
	}
	if len(sys.clients) > 255 {
		panic("mc: at most 255 clients")
	}
	b := &builder{n: s, net: true, streams: true, timers: true, touched: -1}
	for i, a := range sys.addrs {
		ctx := &simContext{sys: sys, self: a}
		s.nodes[i].nd.Init(ctx)
		b.flush(i, ctx.sends, ctx.streams, ctx.timers)
		b.touched = -1 // the sums are computed below
	}
	for _, in := range s.nodes {
		in.h = in.nd.Hash()
	}
	s.nodeSum, s.netSum, s.streamSum, s.retHash = s.sums()
	s.fp = s.fingerprint()
	return s
}

// Observe calls fn for every message any node sends from now on, in this
// state and every state built from it (for test oracles that watch the
// wire, such as "no request executes twice"). Not for concurrent searches.
// Handler results are still reused (see system.memo): fn sees the
// messages of every handler run, reused or not.
func (s *State) Observe(fn func(e Envelope, ordered bool)) { s.sys.observe = fn }

// Node returns the node at a, or nil. Callers must only read it.
func (s *State) Node(a node.Addr) node.Node {
	if i, ok := s.sys.index[a]; ok {
		return s.nodes[i].nd
	}
	return nil
}

// Addrs lists the nodes' addresses in order. Callers must not modify it.
func (s *State) Addrs() []node.Addr { return s.sys.addrs }

// Index is the position of a in Addrs, or -1.
func (s *State) Index(a node.Addr) int {
	if i, ok := s.sys.index[a]; ok {
		return i
	}
	return -1
}

// NodeAt is the node at Addrs()[i]. Callers must only read it.
func (s *State) NodeAt(i int) node.Node { return s.nodes[i].nd }

// View returns what build makes of node i, built once per node value and
// shared by every state that holds the value, so that predicates reading
// many states pay once per distinct node. Every caller in a run must
// build the same kind of view (a run has one view per node value).
func (s *State) View(i int, build func(node.Node) any) any {
	in := s.nodes[i]
	if v := in.view.Load(); v != nil {
		return v.v
	}
	v := &viewBox{build(in.nd)}
	in.view.Store(v) // a racing worker may store an equal view
	return v.v
}

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

// Returns is the real-time order of the clients' returns: for each
// operation any client completed, in order, the client's address.
func (s *State) Returns() []node.Addr {
	out := make([]node.Addr, len(s.returns))
	for i, c := range s.returns {
		out[i] = s.sys.addrs[s.sys.clients[c]]
	}
	return out
}

// Returned is how many operations the clients completed in all.
func (s *State) Returned() int { return len(s.returns) }

// Fingerprint is the state's hash: node hashes, crash flags, the network
// multiset (order-independent), the streams, the timers, the budget used
// and the order of returns. The visited set of a search holds these.
func (s *State) Fingerprint() uint64 { return s.fp }

// across reports whether e crosses the current cut.
func (s *State) across(e Envelope) bool {
	return s.cut != 0 && (e.from == s.cut) != (e.to == s.cut) && e.from > 0 && e.to > 0
}

// Cut is the node whose links are cut in s and for how many more events
// ("", 0 when none).
func (s *State) Cut() (node.Addr, int) {
	if s.cut == 0 {
		return "", 0
	}
	return s.sys.addrs[s.cut-1], int(s.cutLeft)
}

// Quiet reports whether no message is in flight on any stream or the
// unordered network.
func (s *State) Quiet() bool {
	return len(s.net) == 0 && len(s.streams) == 0
}

func (s *State) copyState() *State {
	c := *s
	return &c
}

// Mix is a 64-bit finalizer (splitmix64), for predicates that build
// cache keys.
func Mix(x uint64) uint64 { return mix(x) }

// mix is a 64-bit finalizer (splitmix64). Multisets hash as the sum of
// mix(part hash), so duplicates count and order does not; sequences hash
// by chaining mix(h ^ x).
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

const (
	kNode      = 0x9e3779b97f4a7c15
	kCrashed   = 0xd6e8feb86659fd93
	kTimer     = 0xa0761d6478bd642f
	kLink      = 0xe7037ed1a0b428db
	kReturn    = 0x8ebc6af09c88c6e3
	kFP        = 0x589965cc75374cc3
	kRestart   = 0x1d8e4e27c47d124f
	kPartition = 0x6c8e9cf570932bd5
	kLag       = 0x2545f4914f6cdd1d
)

// nodePart hashes node i's state, crash flag and timers (in order).
func (s *State) nodePart(i int) uint64 {
	h := mix(kNode*uint64(i+1) ^ s.nodes[i].h)
	if s.crashed[i] {
		h = mix(h ^ kCrashed)
	}
	if d := s.nodes[i].disk; d != nil {
		h = mix(h ^ kLag ^ d.h)
		for _, e := range s.nodes[i].held {
			h = mix(h ^ e.hash)
		}
	}
	for _, t := range s.timers[i] {
		h = mix(h ^ t.hash)
		h = mix(h ^ kTimer ^ uint64(t.Min))
		h = mix(h ^ uint64(t.Max))
	}
	return h
}

// streamPart hashes one stream: its link and its messages in order.
func streamPart(q *stream) uint64 {
	h := q.lh
	for _, e := range q.msgs {
		h = mix(h ^ e.hash)
	}
	return mix(h + uint64(len(q.msgs)))
}

func linkHash(from, to int32) uint64 { return mix(kLink ^ uint64(from)<<32 ^ uint64(to)) }

func returnHash(h uint64, c uint8) uint64 { return mix(h ^ kReturn*(uint64(c)+1)) }

// sums computes the fingerprint's parts from scratch (NewState, and the
// checks of the incremental upkeep).
func (s *State) sums() (nodeSum, netSum, streamSum, retHash uint64) {
	for i := range s.nodes {
		nodeSum += s.nodePart(i)
	}
	for _, e := range s.net {
		netSum += mix(e.hash)
	}
	for i := range s.streams {
		streamSum += streamPart(&s.streams[i])
	}
	for _, c := range s.returns {
		retHash = returnHash(retHash, c)
	}
	return
}

func (s *State) fingerprint() uint64 {
	h := mix(s.nodeSum ^ kFP)
	h = mix(h ^ s.netSum)
	h = mix(h ^ s.streamSum)
	h = mix(h ^ uint64(s.used.Drops))
	h = mix(h ^ uint64(s.used.Duplicates))
	h = mix(h ^ uint64(s.used.Crashes))
	h = mix(h ^ uint64(s.used.Fires))
	if s.used.Restarts != 0 { // fingerprints without restarts are unchanged
		h = mix(h ^ kRestart*uint64(s.used.Restarts))
	}
	if s.used.Partitions != 0 { // nor those without cuts
		h = mix(h ^ kPartition*uint64(s.used.Partitions))
		h = mix(h ^ uint64(s.cut)<<32 ^ uint64(s.cutLeft))
	}
	return mix(h ^ s.retHash)
}

// checkSums reports whether the incrementally kept fingerprint parts
// match a computation from scratch.
func (s *State) checkSums() error {
	ns, nets, ss, rh := s.sums()
	if ns != s.nodeSum || nets != s.netSum || ss != s.streamSum || rh != s.retHash || s.fp != s.fingerprint() {
		return fmt.Errorf("mc: incremental fingerprint parts (%x %x %x %x) differ from a recomputation (%x %x %x %x)",
			s.nodeSum, s.netSum, s.streamSum, s.retHash, ns, nets, ss, rh)
	}
	return nil
}

func (s *State) findStream(l link) (int, bool) {
	return slices.BinarySearchFunc(s.streams, l, func(q stream, l link) int {
		if q.link.From != l.From {
			return strings.Compare(string(q.link.From), string(l.From))
		}
		return strings.Compare(string(q.link.To), string(l.To))
	})
}

// ServersKey hashes the states of every node but the clients: predicates
// that read only servers cache their results by it.
func (s *State) ServersKey() uint64 {
	var h uint64
	for _, i := range s.sys.servers {
		h = mix(h ^ s.nodes[i].h)
	}
	return h
}

// ClientsKey hashes the clients' states and the order of their returns:
// predicates on the clients' history cache their results by it.
func (s *State) ClientsKey() uint64 {
	h := s.retHash ^ kReturn
	for _, i := range s.sys.clients {
		h = mix(h ^ s.nodes[i].h)
	}
	return h
}

func (s *State) String() string {
	return fmt.Sprintf("state{%d nodes, %d messages, %d streams, fp %016x}", len(s.nodes), len(s.net), len(s.streams), s.fp)
}

// clone clones node value nd, whose hash is h, under its clone lock.
func (sys *system) clone(nd node.Node, h uint64) node.Node {
	lk := &sys.cloneLocks[h%uint64(len(sys.cloneLocks))]
	lk.Lock()
	defer lk.Unlock()
	return nd.Clone()
}
