// Package runtime is Amalgam's production host: it runs protocol nodes
// (node.Node) with wall-clock timers and, optionally, pebble persistence,
// over a Transport (gRPC in production, simulated links in the benchmark
// harness). One Host is one machine: one transport endpoint (client API
// and node traffic) and one event-loop goroutine per node it hosts.
//
// The code is split by concern:
//
//	host.go        the Host: options, adding nodes, start and stop
//	loop.go        a node's event loop: its inbox and batches of events
//	batch.go       the batch step: collect, persist, release
//	lazysync.go    lazy batches: released once a later sync covers them
//	synccause.go   an opt-in count of store writes by cause
//	timers.go      wall-clock timers
//	send.go        unordered messages, out and in
//	stream.go      ordered streams over the transport
//	incarnation.go replacements: which streams and timers end
//	transport.go   the Transport interface and the gRPC transport
//	proxy.go       RunClient: client nodes run on a caller's goroutine
//	store.go       the pebble store's keys
//	snapshot.go    snapshots of the nodes for online checking
//	steer.go       event filters for execution steering
//	immediate.go   the immediate safety check
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Options configure a Host.
type Options struct {
	// Transport carries the host's traffic; nil builds the gRPC transport
	// from Listener, BlockSize, ServerOptions, DialOptions and Register.
	Transport Transport
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
	// Local, if set, is offered every unordered message sent from this
	// host before it goes to the transport, and says whether it took it
	// (a machine's client API takes the replies to its callers).
	Local func(from, to node.Addr, m node.Message) bool
}

// Metrics is what the host reports. All methods must be safe for
// concurrent use.
type Metrics interface {
	StreamReconnect(from, to node.Addr)
	BatchCommitted(events int, d time.Duration)
	EventRefused(at node.Addr) // the immediate check postponed a message
}

type noMetrics struct{}

func (noMetrics) StreamReconnect(node.Addr, node.Addr) {}
func (noMetrics) BatchCommitted(int, time.Duration)    {}
func (noMetrics) EventRefused(node.Addr)               {}

// Host runs nodes.
type Host struct {
	opts   Options
	log    *slog.Logger
	tr     Transport
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // loops, stream senders, unordered senders

	mu      sync.Mutex
	loops   map[node.Addr]*loop
	senders map[string]*sender
	// mailboxes receive the messages to client nodes run by RunClient;
	// nmail counts them, so that hosts without any skip the lookup.
	mailboxes map[node.Addr]chan event
	nmail     atomic.Int64
	started   bool
	stopped   bool
	steer     steering  // event filters (steer.go)
	imm       immediate // the immediate safety check (immediate.go)

	wire.UnimplementedClientServer
}

// NewHost returns a host that will serve on its transport once started.
func NewHost(opts Options) *Host {
	h := &Host{opts: opts, loops: map[node.Addr]*loop{}, senders: map[string]*sender{},
		mailboxes: map[node.Addr]chan event{}}
	h.log = opts.Logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.opts.Metrics == nil {
		h.opts.Metrics = noMetrics{}
	}
	h.tr = opts.Transport
	if h.tr == nil {
		h.tr = newGRPCTransport(opts, h.log)
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// Addr is the address the host serves at.
func (h *Host) Addr() string { return h.tr.Addr() }

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
		in: map[node.Addr]*inStream{}, out: map[node.Addr]*outStream{}, ackOut: map[node.Addr]*outStream{}, peerInc: map[node.Addr]uint64{}}
	if s := h.opts.Store; s != nil && s.sync {
		l.pipe = make(chan *ready, pipeDepth)
	}
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
	if p, ok := n.(node.Peered); ok {
		l.peerVer = p.PeerVersion()
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
		l.start()
	}
	h.log.Info("node added", "addr", a)
	return l, nil
}

// Send sends an unordered message from address from (which need not be a
// node of this host) to to.
func (h *Host) Send(from, to node.Addr, m node.Message) { h.send(from, to, m) }

// SetClientServer installs the implementation of the client API (gRPC
// transport only).
func (h *Host) SetClientServer(c wire.ClientServer) {
	if g, ok := h.tr.(*grpcTransport); ok {
		g.client = c
	}
}

// Start serves the transport and starts every node's event loop; each
// node's Init runs first in its loop.
func (h *Host) Start() {
	h.mu.Lock()
	h.started = true
	for _, l := range h.loops {
		l.start()
	}
	h.mu.Unlock()
	h.tr.Start(inbound{h})
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
	// Peers' streams into this host never end on their own: the transport
	// cuts them. Everything a client was told is committed is already
	// durable.
	h.tr.Stop()
	h.wg.Wait()
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
