// Package harness runs Amalgam, ShardedPaxos and RSPaxos side by side for
// the evaluation of thesis 3.6 (issue 6): closed-loop clients, seeded
// workloads, warm-up and fixed duration, and results as JSON, CSV and
// plots.
//
// All three systems run in the same in-process host (this file): each
// node is a deterministic state machine from its protocol package, run by
// its own event-loop goroutine with wall-clock timers; messages travel
// through an in-memory network that models every machine's link (a
// bandwidth limit per direction) so that bytes on the wire cost time as
// they do between real machines. Nothing is persisted: every run is in
// memory mode (the baselines have no persistence), and every result says
// so. The production runtime (gRPC, pebble) does not host the baselines
// yet because their messages have no wire encoding; see docs/benchmarks.md.
package harness

import (
	"container/heap"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// NetOptions describe the simulated network.
type NetOptions struct {
	// Bandwidth is each machine's link speed in bytes per second, in each
	// direction (0: unlimited). A message between two machines occupies the
	// sender's egress and the receiver's ingress for size/Bandwidth.
	// Clients sit on their own unlimited machines.
	Bandwidth float64
	// Latency is added to every message between two machines.
	Latency time.Duration
}

// hosted is one node with its event loop.
type hosted struct {
	addr    node.Addr
	n       node.Node
	machine int // -1: a client, off the server machines
	mu      sync.Mutex
	q       []event
	wake    chan struct{}
	rng     *rand.Rand // timer jitter; used by the loop goroutine only
	net     *Net
	handled atomic.Int64
}

type event struct {
	from  node.Addr
	m     node.Message
	t     node.Timer
	timer bool
}

// Net hosts nodes and carries their messages.
type Net struct {
	opt      NetOptions
	nodes    map[node.Addr]*hosted
	machines int
	stopped  atomic.Bool
	stop     chan struct{}
	wg       sync.WaitGroup

	mu       sync.Mutex // guards the link state and the delivery heap
	egFree   []time.Time
	inFree   []time.Time
	pending  deliveries
	seq      uint64
	kick     chan struct{}
	bytesOut atomic.Int64 // bytes sent between machines
	dropped  atomic.Int64 // unordered messages dropped by full links
}

// NewNet makes a network of machines server machines.
func NewNet(machines int, opt NetOptions) *Net {
	return &Net{
		opt: opt, nodes: map[node.Addr]*hosted{}, machines: machines,
		stop: make(chan struct{}), kick: make(chan struct{}, 1),
		egFree: make([]time.Time, machines), inFree: make([]time.Time, machines),
	}
}

// Add hosts n at addr on machine (-1 for a client). Call before Start.
func (nt *Net) Add(addr node.Addr, machine int, n node.Node) {
	nt.nodes[addr] = &hosted{addr: addr, n: n, machine: machine, wake: make(chan struct{}, 1),
		rng: rand.New(rand.NewPCG(uint64(len(nt.nodes)), 7)), net: nt}
}

// Node returns the node at addr. Only read it after Stop.
func (nt *Net) Node(addr node.Addr) node.Node {
	if h := nt.nodes[addr]; h != nil {
		return h.n
	}
	return nil
}

// Start runs Init on every node and starts the event loops.
func (nt *Net) Start() {
	nt.wg.Add(1)
	go nt.deliverLoop()
	for _, h := range nt.nodes {
		nt.wg.Add(1)
		go h.loop()
	}
}

// Stop ends every loop and waits for them; pending messages are dropped.
func (nt *Net) Stop() {
	if nt.stopped.Swap(true) {
		return
	}
	close(nt.stop)
	nt.wg.Wait()
}

// Dropped is the number of unordered messages full links dropped.
func (nt *Net) Dropped() int64 { return nt.dropped.Load() }

// BytesBetweenMachines is the number of bytes sent between machines.
func (nt *Net) BytesBetweenMachines() int64 { return nt.bytesOut.Load() }

func (h *hosted) push(e event) {
	h.mu.Lock()
	h.q = append(h.q, e)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func (h *hosted) loop() {
	defer h.net.wg.Done()
	h.n.Init(h)
	for {
		select {
		case <-h.net.stop:
			return
		case <-h.wake:
		}
		h.mu.Lock()
		batch := h.q
		h.q = nil
		h.mu.Unlock()
		for _, e := range batch {
			if h.net.stopped.Load() {
				return
			}
			if e.timer {
				h.n.Timer(h, e.t)
			} else {
				h.n.Handle(h, e.from, e.m)
			}
		}
		h.handled.Add(int64(len(batch)))
	}
}

// Self implements node.Context.
func (h *hosted) Self() node.Addr { return h.addr }

// Send implements node.Context.
func (h *hosted) Send(to node.Addr, m node.Message) { h.net.send(h, to, m, true) }

// Stream implements node.Context: the network is lossless and FIFO per
// pair of nodes, so a stream is a send.
func (h *hosted) Stream(to node.Addr, m node.Message) { h.net.send(h, to, m, false) }

// SetTimer implements node.Context.
func (h *hosted) SetTimer(t node.Timer, lo, hi time.Duration) {
	d := lo
	if hi > lo {
		d += time.Duration(h.rng.Int64N(int64(hi - lo)))
	}
	time.AfterFunc(d, func() {
		if !h.net.stopped.Load() {
			h.push(event{t: t, timer: true})
		}
	})
}

// MaxBacklog bounds how far ahead a link may be booked for unordered
// messages between server machines: like a switch buffer, a link whose
// queue is longer drops them (the node API allows unordered messages to be
// lost; senders retry). Ordered streams and client traffic are never
// dropped, they queue. Without this, the baselines' heartbeat
// retransmissions of accept requests grow a saturated link's queue
// without bound.
const MaxBacklog = 100 * time.Millisecond

func (nt *Net) send(from *hosted, to node.Addr, m node.Message, droppable bool) {
	dst := nt.nodes[to]
	if dst == nil || nt.stopped.Load() {
		return
	}
	src, dm := from.machine, dst.machine
	if src == dm || (nt.opt.Bandwidth <= 0 && nt.opt.Latency <= 0) {
		if src != dm {
			nt.bytesOut.Add(int64(wireSize(m)))
		}
		dst.push(event{from: from.addr, m: m})
		return
	}
	size := wireSize(m)
	nt.bytesOut.Add(int64(size))
	xfer := time.Duration(0)
	if nt.opt.Bandwidth > 0 {
		xfer = time.Duration(float64(size) / nt.opt.Bandwidth * 1e9)
	}
	now := time.Now()
	nt.mu.Lock()
	start := now
	if src >= 0 && nt.egFree[src].After(start) {
		start = nt.egFree[src]
	}
	if dm >= 0 && nt.inFree[dm].After(start) {
		start = nt.inFree[dm]
	}
	if droppable && src >= 0 && dm >= 0 && start.Sub(now) > MaxBacklog {
		nt.mu.Unlock()
		nt.dropped.Add(1)
		return
	}
	end := start.Add(xfer)
	if src >= 0 {
		nt.egFree[src] = end
	}
	if dm >= 0 {
		nt.inFree[dm] = end
	}
	at := end.Add(nt.opt.Latency)
	if !at.After(now) {
		nt.mu.Unlock()
		dst.push(event{from: from.addr, m: m})
		return
	}
	nt.seq++
	heap.Push(&nt.pending, delivery{at: at, seq: nt.seq, to: dst, ev: event{from: from.addr, m: m}})
	first := nt.pending[0].seq == nt.seq
	nt.mu.Unlock()
	if first {
		select {
		case nt.kick <- struct{}{}:
		default:
		}
	}
}

// deliverSlack is how early a message may be handed over. Go's timers
// sleep in steps of about a millisecond, so waiting for sub-millisecond
// deadlines would add up to a millisecond per message; handing messages
// over up to this much early keeps latencies honest. Link occupancy is
// still accounted exactly, so throughput limits hold.
const deliverSlack = 500 * time.Microsecond

// deliverLoop hands delayed messages over when their time comes. Messages
// of one pair of nodes leave in send order (their times never decrease and
// ties go by send order), so the network is FIFO per pair.
func (nt *Net) deliverLoop() {
	defer nt.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		nt.mu.Lock()
		now := time.Now()
		var due []delivery
		for len(nt.pending) > 0 && !nt.pending[0].at.After(now.Add(deliverSlack)) {
			due = append(due, heap.Pop(&nt.pending).(delivery))
		}
		wait := time.Hour
		if len(nt.pending) > 0 {
			wait = nt.pending[0].at.Sub(now)
		}
		nt.mu.Unlock()
		for _, d := range due {
			d.to.push(d.ev)
		}
		t.Reset(wait)
		select {
		case <-nt.stop:
			return
		case <-nt.kick:
		case <-t.C:
		}
	}
}

type delivery struct {
	at  time.Time
	seq uint64
	to  *hosted
	ev  event
}

type deliveries []delivery

func (d deliveries) Len() int { return len(d) }
func (d deliveries) Less(i, j int) bool {
	if !d[i].at.Equal(d[j].at) {
		return d[i].at.Before(d[j].at)
	}
	return d[i].seq < d[j].seq
}
func (d deliveries) Swap(i, j int) { d[i], d[j] = d[j], d[i] }
func (d *deliveries) Push(x any)   { *d = append(*d, x.(delivery)) }
func (d *deliveries) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

// headerBytes is charged per message for framing (gRPC and TCP/IP headers
// are of this order).
const headerBytes = 64

// wireSize estimates a message's encoded size: its byte payloads and
// 8 bytes per scalar, plus a header.
func wireSize(m node.Message) int {
	return headerBytes + valueSize(reflect.ValueOf(m), 0)
}

func valueSize(v reflect.Value, depth int) int {
	if depth > 12 || !v.IsValid() {
		return 0
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 1
		}
		return valueSize(v.Elem(), depth+1)
	case reflect.Struct:
		n := 0
		for i := 0; i < v.NumField(); i++ {
			n += valueSize(v.Field(i), depth+1)
		}
		return n
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Len() + 2
		}
		n := 2
		for i := 0; i < v.Len(); i++ {
			n += valueSize(v.Index(i), depth+1)
		}
		return n
	case reflect.Map:
		n := 2
		it := v.MapRange()
		for it.Next() {
			n += valueSize(it.Key(), depth+1) + valueSize(it.Value(), depth+1)
		}
		return n
	case reflect.String:
		return v.Len() + 1
	case reflect.Bool, reflect.Uint8, reflect.Int8:
		return 1
	default:
		return 8
	}
}
