// Package runtime is Amalgam's production host: it runs protocol nodes
// (node.Node) over gRPC, with wall-clock timers and, optionally, pebble
// persistence. One Host is one machine: one gRPC server (client API and
// transport) and one event-loop goroutine per node it hosts.
package runtime

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Options configure a Host.
type Options struct {
	// Listener is where the host serves gRPC.
	Listener net.Listener
	// Resolve maps a node address to the host:port of the machine running
	// it. Addresses it does not know are unreachable.
	Resolve func(node.Addr) (string, bool)
	// BlockSize sets the gRPC message limits (wire.MaxMessageSize).
	BlockSize int
	// Store persists nodes and streams; nil runs in memory only.
	Store *Store
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// ServerOptions and DialOptions are added to the defaults (for
	// example transport credentials). Without DialOptions credentials,
	// connections are insecure.
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	// Register adds more services to the host's gRPC server.
	Register func(*grpc.Server)
	// Metrics receives counters; nil ignores them.
	Metrics Metrics
	// Multicast, if set, lists the hosts that get a copy of an unordered
	// message to the address (the replicas of the reconfiguration
	// service); an empty list falls back to Resolve.
	Multicast func(node.Addr) []string
	// NewNode, if set, is asked for a node when a message arrives for an
	// address with no node here (a spare starting the incarnation a
	// NewConfig gives it). A non-nil node is added, restored from the
	// store if it persisted anything, started, and then gets the message.
	NewNode func(a node.Addr, m node.Message) node.Node
	// Inbound, if set, receives unordered messages for addresses with no
	// node here and no NewNode (the reconfiguration service's host).
	Inbound func(from, to node.Addr, m node.Message)
}

// Metrics is what the host reports. All methods must be safe for
// concurrent use.
type Metrics interface {
	StreamReconnect(from, to node.Addr)
	BatchCommitted(events int, d time.Duration)
}

type noMetrics struct{}

func (noMetrics) StreamReconnect(node.Addr, node.Addr) {}
func (noMetrics) BatchCommitted(int, time.Duration)    {}

// Host runs nodes.
type Host struct {
	opts   Options
	log    *slog.Logger
	server *grpc.Server
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // loops, stream senders, unordered senders, timers

	mu      sync.Mutex
	loops   map[node.Addr]*loop
	conns   map[string]*grpc.ClientConn
	senders map[string]*sender
	waiters map[waitKey][]chan node.Message
	// mailboxes receive the messages to client nodes run by RunClient;
	// nmail counts them, so that hosts without any skip the lookup.
	mailboxes map[node.Addr]chan event
	nmail     atomic.Int64
	started   bool
	stopped   bool

	// ClientHandler, if set, serves the client API (see clientapi.go).
	wire.UnimplementedClientServer
	client wire.ClientServer
}

// NewHost returns a host that will serve on opts.Listener once started.
func NewHost(opts Options) *Host {
	h := &Host{opts: opts, loops: map[node.Addr]*loop{}, conns: map[string]*grpc.ClientConn{},
		senders: map[string]*sender{}, waiters: map[waitKey][]chan node.Message{},
		mailboxes: map[node.Addr]chan event{}}
	h.log = opts.Logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.opts.Metrics == nil {
		h.opts.Metrics = noMetrics{}
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// Addr is the address the host listens on.
func (h *Host) Addr() string { return h.opts.Listener.Addr().String() }

// AddNode adds a node before Start. With a store, a node.Persistent node
// is restored from what it persisted before, and its streams resume.
func (h *Host) AddNode(a node.Addr, n node.Node) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return errors.New("runtime: AddNode after Start")
	}
	_, err := h.addLocked(a, n)
	return err
}

// addLocked creates the loop of node a, restoring it from the store. The
// caller holds h.mu and starts the loop if the host runs.
func (h *Host) addLocked(a node.Addr, n node.Node) (*loop, error) {
	if _, ok := h.loops[a]; ok {
		return nil, fmt.Errorf("runtime: node %s added twice", a)
	}
	l := &loop{h: h, addr: a, n: n, inbox: make(chan event, 1024),
		in: map[node.Addr]*inStream{}, out: map[node.Addr]*outStream{}, peerInc: map[node.Addr]uint64{}}
	if s := h.opts.Store; s != nil {
		if p, ok := n.(node.Persistent); ok {
			l.pers = p
			p.TrackChanges()
			has, err := s.hasNode(a)
			if err != nil {
				return nil, err
			}
			if has {
				if err := p.Restore(nodeReader{s, a}); err != nil {
					return nil, fmt.Errorf("restoring %s: %w", a, err)
				}
			}
		}
		if err := l.restoreStreams(); err != nil {
			return nil, fmt.Errorf("restoring streams of %s: %w", a, err)
		}
		if err := l.restorePeers(); err != nil {
			return nil, fmt.Errorf("restoring peers of %s: %w", a, err)
		}
		for to, o := range l.out {
			o.toInc = l.peerInc[to]
		}
	}
	l.noteIncarnation()
	h.loops[a] = l
	return l, nil
}

// addLive adds node n at a to a running host (see Options.NewNode).
func (h *Host) addLive(a node.Addr, n node.Node) (*loop, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l, ok := h.loops[a]; ok {
		return l, nil
	}
	if h.stopped {
		return nil, errors.New("host stopped")
	}
	l, err := h.addLocked(a, n)
	if err != nil {
		return nil, err
	}
	if h.started {
		for _, o := range l.out {
			o.start()
		}
		h.wg.Add(1)
		go l.run()
	}
	h.log.Info("node added", "addr", a)
	return l, nil
}

// Send sends an unordered message from address from (which need not be a
// node of this host) to to.
func (h *Host) Send(from, to node.Addr, m node.Message) { h.send(from, to, m) }

// SetClientServer installs the implementation of the client API.
func (h *Host) SetClientServer(c wire.ClientServer) { h.client = c }

// Start serves gRPC and starts every node's event loop; each node's Init
// runs first in its loop.
func (h *Host) Start() {
	h.mu.Lock()
	h.started = true
	opts := append(wire.ServerOptions(h.opts.BlockSize), h.opts.ServerOptions...)
	h.server = grpc.NewServer(opts...)
	wire.RegisterTransportServer(h.server, &transport{h: h})
	if h.client != nil {
		wire.RegisterClientServer(h.server, h.client)
	}
	if h.opts.Register != nil {
		h.opts.Register(h.server)
	}
	for _, l := range h.loops {
		for _, o := range l.out {
			o.start()
		}
		h.wg.Add(1)
		go l.run()
	}
	h.mu.Unlock()
	go func() {
		if err := h.server.Serve(h.opts.Listener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			h.log.Error("grpc server stopped", "err", err)
		}
	}()
}

// Stop stops serving, stops every loop and sender, and waits for them. It
// does not close the store.
func (h *Host) Stop() {
	h.mu.Lock()
	if h.stopped || !h.started {
		h.stopped = true
		h.mu.Unlock()
		return
	}
	h.stopped = true
	h.mu.Unlock()
	h.cancel()
	// Not GracefulStop: peers' streams into this host never end on their
	// own. Everything a client was told is committed is already durable.
	h.server.Stop()
	h.wg.Wait()
	h.mu.Lock()
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.mu.Unlock()
}

// Inspect runs fn on the node's state inside its event loop and waits for
// it. fn must only read.
func (h *Host) Inspect(ctx context.Context, a node.Addr, fn func(node.Node)) error {
	l := h.loop(a)
	if l == nil {
		return fmt.Errorf("no node %s here", a)
	}
	done := make(chan struct{})
	if err := l.post(ctx, event{fn: func(_ node.Context, n node.Node) { fn(n); close(done) }}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Deliver posts a message to a local node as if it came from from over an
// unordered channel.
func (h *Host) Deliver(ctx context.Context, from, to node.Addr, m node.Message) error {
	l := h.loop(to)
	if l == nil {
		return fmt.Errorf("no node %s here", to)
	}
	return l.post(ctx, event{from: from, m: m})
}

// Nodes lists the addresses of the hosted nodes.
func (h *Host) Nodes() []node.Addr {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]node.Addr, 0, len(h.loops))
	for a := range h.loops {
		out = append(out, a)
	}
	return out
}

func (h *Host) loop(a node.Addr) *loop {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loops[a]
}

func (h *Host) conn(addr string) (*grpc.ClientConn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.conns[addr]; ok {
		return c, nil
	}
	opts := wire.DialOptions(h.opts.BlockSize)
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	opts = append(opts, h.opts.DialOptions...)
	c, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, err
	}
	h.conns[addr] = c
	return c, nil
}

// ---------------------------------------------------------------------------
// Client replies

// waitKey identifies a reply a local RPC waits for: client addresses are
// "client/<id>", and replies carry the request's sequence number.
type waitKey struct {
	to  node.Addr
	seq uint64
}

// Wait registers interest in the reply to seq sent to address to. The
// returned channel receives it; cancel must be called when done.
func (h *Host) Wait(to node.Addr, seq uint64) (<-chan node.Message, func()) {
	ch := make(chan node.Message, 1)
	k := waitKey{to, seq}
	h.mu.Lock()
	h.waiters[k] = append(h.waiters[k], ch)
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		ws := h.waiters[k]
		for i, w := range ws {
			if w == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(h.waiters, k)
		} else {
			h.waiters[k] = ws
		}
	}
}

func (h *Host) deliverLocal(to node.Addr, m node.Message, seq uint64) {
	h.mu.Lock()
	ws := h.waiters[waitKey{to, seq}]
	h.mu.Unlock()
	for _, w := range ws {
		select {
		case w <- m:
		default:
		}
	}
}

// ---------------------------------------------------------------------------
// Event loops

type event struct {
	from     node.Addr
	m        node.Message
	t        node.Timer
	epoch    uint64 // for timers: the incarnation epoch that set it
	fn       func(node.Context, node.Node)
	sid, seq uint64 // for stream messages: the stream and sequence number
}

type loop struct {
	h     *Host
	addr  node.Addr
	n     node.Node
	pers  node.Persistent // nil unless persisted
	inbox chan event

	mu  sync.Mutex
	in  map[node.Addr]*inStream
	out map[node.Addr]*outStream // written by the loop only
	// peerInc is the newest incarnation of each peer that this node's
	// configurations name (see incarnation.go); guarded by mu.
	peerInc map[node.Addr]uint64
	// inc is the node's incarnation (node.Incarnated; 0 if it has none).
	inc atomic.Uint64
	// epoch counts the incarnations started here; timers set by an older
	// one are dropped. Loop goroutine only.
	epoch uint64
}

func (l *loop) post(ctx context.Context, ev event) error {
	select {
	case l.inbox <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-l.h.ctx.Done():
		return errors.New("host stopped")
	}
}

// hctx is the node.Context of one batch.
type hctx struct {
	self    node.Addr
	sends   []effect
	streams []effect
	timers  []timerEffect
}

type effect struct {
	to node.Addr
	m  node.Message
}

type timerEffect struct {
	t        node.Timer
	min, max time.Duration
}

func (c *hctx) Self() node.Addr                     { return c.self }
func (c *hctx) Send(to node.Addr, m node.Message)   { c.sends = append(c.sends, effect{to, m}) }
func (c *hctx) Stream(to node.Addr, m node.Message) { c.streams = append(c.streams, effect{to, m}) }
func (c *hctx) SetTimer(t node.Timer, min, max time.Duration) {
	c.timers = append(c.timers, timerEffect{t, min, max})
}

const maxBatch = 256

func (l *loop) run() {
	defer l.h.wg.Done()
	batch := []event{{fn: func(ctx node.Context, n node.Node) { n.Init(ctx) }}}
	for {
		l.processAll(batch)
		batch = batch[:0]
		select {
		case ev := <-l.inbox:
			batch = append(batch, ev)
		case <-l.h.ctx.Done():
			return
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case ev := <-l.inbox:
				batch = append(batch, ev)
			default:
				break drain
			}
		}
	}
}

type delivered struct{ sid, seq uint64 }

// process runs a batch of events, makes their effects durable, then
// releases them. With restart, the batch is one message that starts a new
// incarnation here: the old incarnation's streams, timers and stored state
// end first (incarnation.go).
func (l *loop) process(batch []event, restart bool) {
	start := time.Now()
	ctx := &hctx{self: l.addr}
	in := map[node.Addr]delivered{}
	var inc incChanges
	if restart {
		inc = l.endIncarnation()
	}
	for _, ev := range batch {
		switch {
		case ev.fn != nil:
			ev.fn(ctx, l.n)
		case ev.t != nil:
			if ev.epoch != l.epoch {
				continue // set by an incarnation that ended
			}
			l.n.Timer(ctx, ev.t)
		default:
			if ev.seq > 0 && !l.current(ev.from, ev.sid) {
				continue // a stream that ended with its sender's incarnation
			}
			mark := len(ctx.streams)
			before := configNum(l.n)
			l.n.Handle(ctx, ev.from, ev.m)
			l.learn(ctx, mark, before, ev.m, &inc, in)
			if ev.seq > 0 {
				in[ev.from] = delivered{ev.sid, ev.seq}
			}
		}
	}
	if restart {
		if l.pers != nil {
			l.pers.TrackChanges() // the new state is written whole
		}
	}
	l.noteIncarnation()
	// Number the stream messages.
	type queued struct {
		o *outStream
		e outEntry
	}
	var qs []queued
	touched := map[*outStream]bool{}
	for _, s := range ctx.streams {
		if s.m == nil { // the peer's incarnation changed: a new stream
			if o := l.dropOut(s.to); o != nil {
				inc.ended = append(inc.ended, o)
				delete(touched, o)
				qs = slices.DeleteFunc(qs, func(q queued) bool { return q.o == o })
			}
			continue
		}
		o := l.outStream(s.to)
		p, err := wire.MessageToProto(s.m)
		if err != nil {
			panic(fmt.Sprintf("runtime: %s streams an unencodable message: %v", l.addr, err))
		}
		qs = append(qs, queued{o, outEntry{seq: o.next, m: p}})
		o.next++
		touched[o] = true
	}
	if st := l.h.opts.Store; st != nil {
		b := st.db.NewBatch()
		inc.write(b, l.addr)
		if l.pers != nil {
			l.pers.Persist(nodeWriter{b, l.addr})
		}
		for from, d := range in {
			v := pair(d.sid, d.seq)
			s := l.inStream(from)
			s.mu.Lock()
			if s.sid == d.sid {
				v = binary.BigEndian.AppendUint64(v, s.fromInc)
			}
			s.mu.Unlock()
			_ = b.Set(inKey(l.addr, from), v, nil)
		}
		for o := range touched {
			_ = b.Set(outMetaKey(l.addr, o.to), pair(o.sid, o.next), nil)
		}
		for _, q := range qs {
			v, err := proto.Marshal(q.e.m)
			if err != nil {
				panic(err)
			}
			_ = b.Set(outKey(l.addr, q.o.to, q.e.seq), v, nil)
		}
		if !b.Empty() {
			if err := b.Commit(st.writeOpts()); err != nil {
				// The node's state is ahead of the disk: it must not
				// send anything more. Crash.
				panic(fmt.Sprintf("runtime: %s: committing a batch: %v", l.addr, err))
			}
		}
		_ = b.Close()
	}
	// Release.
	for _, o := range inc.ended {
		o.stop()
	}
	for _, q := range qs {
		q.o.push(q.e)
	}
	for from, d := range in {
		l.inStream(from).setPersisted(d.sid, d.seq)
	}
	for _, s := range ctx.sends {
		l.h.send(l.addr, s.to, s.m)
	}
	for _, t := range ctx.timers {
		l.setTimer(t)
	}
	l.h.opts.Metrics.BatchCommitted(len(batch), time.Since(start))
}

func (l *loop) setTimer(t timerEffect) {
	d := t.min
	if t.max > t.min {
		d += time.Duration(mrand.Int64N(int64(t.max - t.min + 1)))
	}
	epoch := l.epoch
	l.h.wg.Add(1)
	go func() {
		defer l.h.wg.Done()
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-tm.C:
			_ = l.post(l.h.ctx, event{t: t.t, epoch: epoch})
		case <-l.h.ctx.Done():
		}
	}()
}

// randomID draws a non-zero 64-bit id from crypto/rand.
func randomID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// ---------------------------------------------------------------------------
// Unordered messages

// sender batches unordered messages to one machine into Send RPCs. When
// its queue is full, messages are dropped: unordered messages may be lost.
type sender struct {
	h    *Host
	addr string
	q    chan *wire.Envelope
}

func (h *Host) send(from, to node.Addr, m node.Message) {
	if h.toMailbox(from, to, m) {
		return
	}
	if strings.HasPrefix(string(to), "client/") {
		if r, ok := m.(msg.Reply); ok {
			h.deliverLocal(to, m, r.Seq)
		}
		return
	}
	p, err := wire.MessageToProto(m)
	if err != nil {
		h.log.Error("dropping unencodable message", "to", to, "err", err)
		return
	}
	if h.opts.Multicast != nil {
		if hosts := h.opts.Multicast(to); len(hosts) > 0 {
			for _, a := range hosts {
				h.sendTo(a, from, to, p)
			}
			return
		}
	}
	addr, ok := h.opts.Resolve(to)
	if !ok {
		h.log.Debug("dropping message to unknown address", "to", to)
		return
	}
	h.sendTo(addr, from, to, p)
}

// sendTo queues an encoded unordered message for the host at addr.
func (h *Host) sendTo(addr string, from, to node.Addr, p *wire.Message) {
	h.mu.Lock()
	s, ok := h.senders[addr]
	if !ok && !h.stopped {
		s = &sender{h: h, addr: addr, q: make(chan *wire.Envelope, 4096)}
		h.senders[addr] = s
		h.wg.Add(1)
		go s.run()
	}
	h.mu.Unlock()
	if s == nil {
		return
	}
	select {
	case s.q <- &wire.Envelope{From: string(from), To: string(to), Msg: p}:
	default:
	}
}

func (s *sender) run() {
	defer s.h.wg.Done()
	limit := wire.MaxMessageSize(s.h.opts.BlockSize) / 2
	for {
		var batch []*wire.Envelope
		select {
		case e := <-s.q:
			batch = append(batch, e)
		case <-s.h.ctx.Done():
			return
		}
		size := proto.Size(batch[0])
	more:
		for len(batch) < 256 && size < limit {
			select {
			case e := <-s.q:
				batch = append(batch, e)
				size += proto.Size(e)
			default:
				break more
			}
		}
		c, err := s.h.conn(s.addr)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(s.h.ctx, 2*time.Second)
		_, err = wire.NewTransportClient(c).Send(ctx, &wire.SendRequest{Envelopes: batch})
		cancel()
		if err != nil {
			s.h.log.Debug("unordered send failed; messages lost", "to", s.addr, "n", len(batch), "err", err)
		}
	}
}

// ---------------------------------------------------------------------------
// The transport service

type transport struct {
	wire.UnimplementedTransportServer
	h *Host
}

func (t *transport) Send(ctx context.Context, req *wire.SendRequest) (*wire.SendResponse, error) {
	for _, e := range req.GetEnvelopes() {
		to := node.Addr(e.GetTo())
		m, err := wire.MessageFromProto(e.GetMsg())
		if err != nil {
			continue
		}
		if t.h.toMailbox(node.Addr(e.GetFrom()), to, m) {
			continue
		}
		l := t.h.loop(to)
		if l == nil {
			l = t.h.missing(node.Addr(e.GetFrom()), to, m)
		}
		if l == nil {
			continue
		}
		select {
		case l.inbox <- event{from: node.Addr(e.GetFrom()), m: m}:
		default: // overloaded: unordered messages may be lost
		}
	}
	return &wire.SendResponse{}, nil
}
