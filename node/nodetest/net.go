package nodetest

import (
	"fmt"
	"slices"
	"sort"

	"github.com/amalgam-store/amalgam/node"
)

// Envelope is a message in flight.
type Envelope struct {
	From, To node.Addr
	Msg      node.Message
	Stream   bool // sent with Stream: FIFO on its link, ends with either end
}

// String renders the envelope, e.g. "data/0 -> parity/3 Prepare{...}".
func (e Envelope) String() string {
	how := "->"
	if e.Stream {
		how = "=>"
	}
	return fmt.Sprintf("%s %s %s %s", e.From, how, e.To, Format(e.Msg))
}

// Net runs real nodes for tests: it holds every message they send, in the
// order they were sent, and delivers them only when the test says so. It
// keeps the node API's rules: a stream delivers in order, and ends when
// either end crashes or is succeeded by a new incarnation (node.Starter),
// which a crashed node also receives. Messages to addresses with no node
// (clients, operators) are delivered to nobody: Deliver returns them.
type Net struct {
	nodes   map[node.Addr]node.Node
	crashed map[node.Addr]bool
	flight  []Envelope
	timers  map[node.Addr][]node.Timer
}

// NewNet starts the nodes (Init, in address order) and holds what they send.
func NewNet(nodes map[node.Addr]node.Node) *Net {
	n := &Net{nodes: nodes, crashed: map[node.Addr]bool{}, timers: map[node.Addr][]node.Timer{}}
	for _, a := range n.Addrs() {
		ctx := New(a)
		nodes[a].Init(ctx)
		n.record(a, ctx.Take())
	}
	return n
}

// Addrs lists the nodes' addresses in order.
func (n *Net) Addrs() []node.Addr {
	out := make([]node.Addr, 0, len(n.nodes))
	for a := range n.nodes {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Node is the node at a (nil if none).
func (n *Net) Node(a node.Addr) node.Node { return n.nodes[a] }

// Crashed reports whether the node at a crashed and no new incarnation
// started there.
func (n *Net) Crashed(a node.Addr) bool { return n.crashed[a] }

// InFlight lists the messages not yet delivered, oldest first.
func (n *Net) InFlight() []Envelope { return slices.Clone(n.flight) }

// Inject puts an unordered message from outside (a client, an operator)
// in flight.
func (n *Net) Inject(from, to node.Addr, m node.Message) {
	n.flight = append(n.flight, Envelope{From: from, To: to, Msg: m})
}

// Next is the index in InFlight of the first message from from to to
// (either may be "" for any), or -1.
func (n *Net) Next(from, to node.Addr) int {
	return slices.IndexFunc(n.flight, func(e Envelope) bool {
		return (from == "" || e.From == from) && (to == "" || e.To == to)
	})
}

// Deliver delivers InFlight()[i] and returns it with the receiver's
// effects. handled is false when nobody handled it: no node at the
// address, or a crashed one that it does not start anew. A stream message
// may only be delivered when it is the first in flight on its link.
func (n *Net) Deliver(i int) (e Envelope, effs Effects, handled bool) {
	e = n.flight[i]
	if e.Stream && n.streamHead(e.From, e.To) != i {
		panic(fmt.Sprintf("nodetest: %v overtakes an earlier message on its stream", e))
	}
	n.flight = slices.Delete(n.flight, i, i+1)
	nd := n.nodes[e.To]
	if nd == nil {
		return e, nil, false
	}
	n.startIncarnation(e.To, e.Msg)
	if n.crashed[e.To] {
		return e, nil, false
	}
	ctx := New(e.To)
	nd.Handle(ctx, e.From, e.Msg)
	effs = ctx.Take()
	n.record(e.To, effs)
	return e, effs, true
}

// startIncarnation ends the incarnation at a when m starts a newer one
// there: its streams and timers end, and a crashed node comes back.
func (n *Net) startIncarnation(a node.Addr, m node.Message) {
	st, ok := m.(node.Starter)
	if !ok {
		return
	}
	cur, known := n.nodes[a].(node.Incarnated)
	inc, starts := st.StartsIncarnation(a)
	if !known || !starts || inc <= cur.Incarnation() {
		return
	}
	n.endStreams(a)
	delete(n.timers, a)
	delete(n.crashed, a)
}

// Crash stops the node at a: its streams and timers end, and messages to
// it are dropped until a new incarnation starts there.
func (n *Net) Crash(a node.Addr) {
	n.crashed[a] = true
	n.endStreams(a)
	delete(n.timers, a)
}

func (n *Net) endStreams(a node.Addr) {
	n.flight = slices.DeleteFunc(n.flight, func(e Envelope) bool { return e.Stream && (e.From == a || e.To == a) })
}

// Timers lists the timers the node at a set and that have not fired.
func (n *Net) Timers(a node.Addr) []node.Timer { return slices.Clone(n.timers[a]) }

// Fire runs the node's oldest pending timer and returns its effects; ok
// is false when it has none.
func (n *Net) Fire(a node.Addr) (effs Effects, ok bool) {
	ts := n.timers[a]
	if len(ts) == 0 || n.crashed[a] {
		return nil, false
	}
	n.timers[a] = ts[1:]
	ctx := New(a)
	n.nodes[a].Timer(ctx, ts[0])
	effs = ctx.Take()
	n.record(a, effs)
	return effs, true
}

func (n *Net) record(from node.Addr, effs Effects) {
	for _, e := range effs {
		switch e.Kind {
		case Timer:
			n.timers[from] = append(n.timers[from], e.Timer)
		default:
			n.flight = append(n.flight, Envelope{From: from, To: e.To, Msg: e.Msg, Stream: e.Kind == Stream})
		}
	}
}

// DeliverAll delivers the oldest deliverable message that keep accepts
// (keep nil: any) until there is none, at
// most limit messages, calling each (which may be nil) after every
// delivery. It returns the number delivered and fails if the limit was
// reached with messages left.
func (n *Net) DeliverAll(limit int, keep func(Envelope) bool, each func(e Envelope, effs Effects, handled bool)) (int, error) {
	count := 0
	for len(n.flight) > 0 {
		i := n.first(keep)
		if i < 0 {
			return count, nil
		}
		if count == limit {
			return count, fmt.Errorf("nodetest: %d messages still in flight after %d deliveries", len(n.flight), limit)
		}
		e, effs, handled := n.Deliver(i)
		count++
		if each != nil {
			each(e, effs, handled)
		}
	}
	return count, nil
}

// first is the index of the oldest message keep accepts that may be
// delivered now (the head of its stream), or -1.
func (n *Net) first(keep func(Envelope) bool) int {
	for i, e := range n.flight {
		if (keep == nil || keep(e)) && (!e.Stream || n.streamHead(e.From, e.To) == i) {
			return i
		}
	}
	return -1
}

// streamHead is the index of the first stream message from from to to, or -1.
func (n *Net) streamHead(from, to node.Addr) int {
	return slices.IndexFunc(n.flight, func(e Envelope) bool { return e.Stream && e.From == from && e.To == to })
}
