package harness

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// links is the simulated network under the runtime's hosts: one endpoint
// (a runtime.Transport) per host, each on a machine whose link has a
// bandwidth limit per direction. What crosses it is what the gRPC
// transport would carry (batches of envelopes, stream frames and
// acknowledgements), sized by its protobuf encoding plus a header; the
// messages themselves are handed over without being marshalled.
type links struct {
	opt NetOptions

	mu      sync.Mutex // guards the link state, the delivery heap and eps
	eps     map[string]*endpoint
	egFree  []time.Time
	inFree  []time.Time
	pending deliveries
	queued  map[[2]int]int // deliveries in pending, per pair of machines
	seq     uint64

	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	bytesOut atomic.Int64 // bytes sent between machines
	dropped  atomic.Int64 // unordered batches dropped by full links
}

func newLinks(machines int, opt NetOptions) *links {
	return &links{opt: opt, eps: map[string]*endpoint{}, queued: map[[2]int]int{}, egFree: make([]time.Time, machines),
		inFree: make([]time.Time, machines), kick: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{})}
}

// endpoint returns the transport of the host called name on machine (-1:
// a machine of its own with an unlimited link, as clients have).
func (k *links) endpoint(name string, machine int) *endpoint {
	e := &endpoint{k: k, name: name, machine: machine, conns: map[*conn]bool{}}
	k.mu.Lock()
	k.eps[name] = e
	k.mu.Unlock()
	return e
}

func (k *links) lookup(name string) *endpoint {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.eps[name]
}

// MaxBacklog bounds how far ahead a link may be booked for unordered
// messages between server machines: like a switch buffer, a link whose
// queue is longer drops them (the node API allows unordered messages to be
// lost; senders retry). Ordered streams and client traffic are never
// dropped, they queue. Without this, the baselines' heartbeat
// retransmissions of accept requests grow a saturated link's queue
// without bound.
const MaxBacklog = 100 * time.Millisecond

// headerBytes is charged per batch, frame or acknowledgement for framing
// (gRPC and TCP/IP headers are of this order).
const headerBytes = 64

// carry books size bytes from machine src to machine dst and calls deliver
// when they arrive. It reports false if a droppable message was dropped.
func (k *links) carry(src, dst, size int, droppable bool, deliver func()) bool {
	size += headerBytes
	if src != dst {
		k.bytesOut.Add(int64(size))
	}
	if src == dst || (k.opt.Bandwidth <= 0 && k.opt.Latency <= 0) {
		deliver()
		return true
	}
	xfer := time.Duration(0)
	if k.opt.Bandwidth > 0 {
		xfer = time.Duration(float64(size) / k.opt.Bandwidth * 1e9)
	}
	now := time.Now()
	k.mu.Lock()
	start := now
	if src >= 0 && k.egFree[src].After(start) {
		start = k.egFree[src]
	}
	if dst >= 0 && k.inFree[dst].After(start) {
		start = k.inFree[dst]
	}
	if droppable && src >= 0 && dst >= 0 && start.Sub(now) > MaxBacklog {
		k.mu.Unlock()
		k.dropped.Add(1)
		return false
	}
	end := start.Add(xfer)
	if src >= 0 {
		k.egFree[src] = end
	}
	if dst >= 0 {
		k.inFree[dst] = end
	}
	at := end.Add(k.opt.Latency)
	pair := [2]int{src, dst}
	if !at.After(now.Add(deliverSlack)) && k.queued[pair] == 0 {
		// Due now, and nothing between the two machines is still
		// queued ahead of it: hand it over from this goroutine.
		k.mu.Unlock()
		deliver()
		return true
	}
	k.queued[pair]++
	k.seq++
	heap.Push(&k.pending, delivery{at: at, seq: k.seq, pair: pair, fn: deliver})
	first := k.pending[0].seq == k.seq
	k.mu.Unlock()
	if first {
		select {
		case k.kick <- struct{}{}:
		default:
		}
	}
	return true
}

// deliverSlack is how early a message may be handed over. Go's timers
// sleep in steps of about a millisecond, so waiting for sub-millisecond
// deadlines would add up to a millisecond per message; handing messages
// over up to this much early keeps latencies honest. Link occupancy is
// still accounted exactly, so throughput limits hold.
const deliverSlack = 500 * time.Microsecond

// run hands delayed traffic over when its time comes. What one machine
// sends another arrives in send order (times never decrease and ties go
// by send order), so every connection is FIFO.
func (k *links) run() {
	defer close(k.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		k.mu.Lock()
		now := time.Now()
		var due []delivery
		for len(k.pending) > 0 && !k.pending[0].at.After(now.Add(deliverSlack)) {
			due = append(due, heap.Pop(&k.pending).(delivery))
		}
		wait := time.Hour
		if len(k.pending) > 0 {
			wait = k.pending[0].at.Sub(now)
		}
		k.mu.Unlock()
		for _, d := range due {
			d.fn()
			k.mu.Lock()
			k.queued[d.pair]--
			k.mu.Unlock()
		}
		t.Reset(wait)
		select {
		case <-k.stop:
			return
		case <-k.kick:
		case <-t.C:
		}
	}
}

type delivery struct {
	at   time.Time
	seq  uint64
	pair [2]int // sending and receiving machines
	fn   func()
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

var errClosed = errors.New("simulated connection closed")

// endpoint is one host's runtime.Transport on the simulated links.
type endpoint struct {
	k       *links
	name    string
	machine int

	mu      sync.Mutex
	r       runtime.Receiver         // nil until Start and after Stop
	early   []func(runtime.Receiver) // unordered traffic that came before Start
	conns   map[*conn]bool
	stopped bool
}

func (e *endpoint) Addr() string { return e.name }

func (e *endpoint) Start(r runtime.Receiver) {
	e.mu.Lock()
	e.r = r
	early := e.early
	e.early = nil
	e.mu.Unlock()
	for _, fn := range early {
		fn(r)
	}
}

func (e *endpoint) Stop() {
	e.mu.Lock()
	e.stopped, e.r = true, nil
	cs := e.conns
	e.conns = map[*conn]bool{}
	e.mu.Unlock()
	for c := range cs {
		c.close()
	}
}

func (e *endpoint) receiver() runtime.Receiver {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.r
}

// receive hands unordered traffic to the host, keeping what comes before
// it serves (hosts start one after the other) and dropping what comes
// after it stopped.
func (e *endpoint) receive(fn func(runtime.Receiver)) {
	e.mu.Lock()
	r := e.r
	if r == nil && !e.stopped {
		e.early = append(e.early, fn)
	}
	e.mu.Unlock()
	if r != nil {
		fn(r)
	}
}

// Send implements runtime.Transport.
func (e *endpoint) Send(_ context.Context, addr string, envs []*wire.Envelope) error {
	dst := e.k.lookup(addr)
	if dst == nil {
		return errors.New("no simulated host " + addr)
	}
	size := proto.Size(&wire.SendRequest{Envelopes: envs})
	droppable := e.machine >= 0 && dst.machine >= 0
	e.k.carry(e.machine, dst.machine, size, droppable, func() {
		dst.receive(func(r runtime.Receiver) { r.Receive(envs) })
	})
	return nil
}

// Stream implements runtime.Transport: the receiving host serves the
// connection at once; frames and acknowledgements cross the links.
func (e *endpoint) Stream(ctx context.Context, addr string) (runtime.StreamConn, error) {
	dst := e.k.lookup(addr)
	if dst == nil {
		return nil, errors.New("no simulated host " + addr)
	}
	r := dst.receiver()
	if r == nil {
		return nil, errors.New("simulated host " + addr + " is not serving")
	}
	c := &conn{k: e.k, src: e, dst: dst, frames: make(chan struct{}, 1), acks: make(chan struct{}, 1),
		closed: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for _, ep := range []*endpoint{e, dst} {
		ep.mu.Lock()
		if ep.stopped {
			ep.mu.Unlock()
			c.close()
			return nil, errClosed
		}
		ep.conns[c] = true
		ep.mu.Unlock()
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-c.closed:
		}
		c.close()
	}()
	go func() {
		_ = r.ServeStream(receiver{c})
		c.close()
	}()
	return sender{c}, nil
}

// conn is one ordered connection between two endpoints.
type conn struct {
	k        *links
	src, dst *endpoint
	ctx      context.Context // the serving side's: ends with the connection
	cancel   context.CancelFunc

	mu           sync.Mutex
	inF          []*wire.StreamFrame // arrived at dst
	inA          []*wire.StreamAck   // arrived at src
	frames, acks chan struct{}       // signal arrivals
	closed       chan struct{}
	once         sync.Once
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.closed)
		c.cancel()
		for _, ep := range []*endpoint{c.src, c.dst} {
			ep.mu.Lock()
			delete(ep.conns, c)
			ep.mu.Unlock()
		}
	})
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// push carries m from one end's machine to the other's; on arrival it
// joins *q and ready is signalled.
func push[T proto.Message](c *conn, from, to *endpoint, q *[]T, ready chan struct{}, m T) error {
	select {
	case <-c.closed:
		return errClosed
	default:
	}
	c.k.carry(from.machine, to.machine, proto.Size(m), false, func() {
		c.mu.Lock()
		*q = append(*q, m)
		c.mu.Unlock()
		signal(ready)
	})
	return nil
}

// pop waits for the first message of *q, signalled on ready, or for the
// connection to close.
func pop[T any](c *conn, q *[]T, ready chan struct{}) (T, error) {
	for {
		c.mu.Lock()
		if len(*q) > 0 {
			m := (*q)[0]
			*q = (*q)[1:]
			c.mu.Unlock()
			return m, nil
		}
		c.mu.Unlock()
		select {
		case <-ready:
		case <-c.closed:
			var zero T
			return zero, errClosed
		}
	}
}

// sender is the connection's sending side.
type sender struct{ c *conn }

func (s sender) Send(f *wire.StreamFrame) error {
	return push(s.c, s.c.src, s.c.dst, &s.c.inF, s.c.frames, f)
}

func (s sender) Recv() (*wire.StreamAck, error) { return pop(s.c, &s.c.inA, s.c.acks) }

// receiver is the connection's receiving side.
type receiver struct{ c *conn }

func (s receiver) Context() context.Context { return s.c.ctx }

func (s receiver) Recv() (*wire.StreamFrame, error) { return pop(s.c, &s.c.inF, s.c.frames) }

func (s receiver) Send(a *wire.StreamAck) error {
	return push(s.c, s.c.dst, s.c.src, &s.c.inA, s.c.acks, a)
}
