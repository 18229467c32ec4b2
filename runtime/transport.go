package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/amalgam-store/amalgam/wire"
)

// Transport carries a host's traffic to other hosts: batches of unordered
// messages (over one connection per host if it is a SendStreamer), and
// ordered connections that carry streams (stream.go). The
// production transport is gRPC; the benchmark harness simulates links
// with it. Swapping the transport swaps the environment, not the engine:
// event loops, batches, streams and timers are the same code.
type Transport interface {
	// Addr is where other hosts reach this one.
	Addr() string
	// Start begins handing inbound traffic to r.
	Start(r Receiver)
	// Stop stops serving and cuts every connection, in and out.
	Stop()
	// Send carries envelopes to the host at addr; they may be lost.
	Send(ctx context.Context, addr string, envs []*wire.Envelope) error
	// Stream opens an ordered connection to the host at addr, which
	// lasts until ctx ends or either side fails.
	Stream(ctx context.Context, addr string) (StreamConn, error)
}

// SendStreamer is a Transport that carries the unordered messages to a
// host over one long-lived connection, a batch per message, rather than
// a Send each (send.go).
type SendStreamer interface {
	// SendStream opens the connection to the host at addr, which lasts
	// until ctx ends or either side fails.
	SendStream(ctx context.Context, addr string) (SendConn, error)
}

// SendConn is the sending side of a SendStream connection. Send queues a
// batch and does not wait for the receiver (flow control bounds what is
// in flight); once it fails, CloseAndRecv reports why.
type SendConn interface {
	Send(*wire.SendRequest) error
	CloseAndRecv() (*wire.SendResponse, error)
}

// StreamConn is the sending side of an ordered connection: frames go
// out, acknowledgements come back.
type StreamConn interface {
	Send(*wire.StreamFrame) error
	Recv() (*wire.StreamAck, error)
}

// StreamPeer is the receiving side: frames come in, acknowledgements go
// out. Its context ends with the connection.
type StreamPeer interface {
	Context() context.Context
	Recv() (*wire.StreamFrame, error)
	Send(*wire.StreamAck) error
}

// Receiver takes a host's inbound traffic.
type Receiver interface {
	// Receive takes unordered messages; it does not block.
	Receive(envs []*wire.Envelope)
	// ServeStream serves one inbound ordered connection until it ends.
	ServeStream(s StreamPeer) error
}

// grpcTransport is the production transport: a gRPC server (node traffic,
// the client API and Options.Register's services) and a client
// connection per peer host.
type grpcTransport struct {
	opts   Options
	log    *slog.Logger
	client wire.ClientServer // set before Start, if any

	mu      sync.Mutex
	server  *grpc.Server
	conns   map[string]*grpc.ClientConn
	stopped bool
}

func newGRPCTransport(opts Options, log *slog.Logger) *grpcTransport {
	return &grpcTransport{opts: opts, log: log, conns: map[string]*grpc.ClientConn{}}
}

func (t *grpcTransport) Addr() string { return t.opts.Listener.Addr().String() }

func (t *grpcTransport) Start(r Receiver) {
	opts := append(wire.ServerOptions(t.opts.BlockSize), t.opts.ServerOptions...)
	srv := grpc.NewServer(opts...)
	wire.RegisterTransportServer(srv, &grpcService{r: r})
	if t.client != nil {
		wire.RegisterClientServer(srv, t.client)
	}
	if t.opts.Register != nil {
		t.opts.Register(srv)
	}
	t.mu.Lock()
	t.server = srv
	t.mu.Unlock()
	go func() {
		if err := srv.Serve(t.opts.Listener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.log.Error("grpc server stopped", "err", err)
		}
	}()
}

func (t *grpcTransport) Stop() {
	t.mu.Lock()
	t.stopped = true
	srv, conns := t.server, t.conns
	t.conns = nil
	t.mu.Unlock()
	// Not GracefulStop: peers' streams into this host never end on their
	// own.
	if srv != nil {
		srv.Stop()
	}
	for _, c := range conns {
		_ = c.Close()
	}
}

// conn returns the client connection to the host at addr.
func (t *grpcTransport) conn(addr string) (*grpc.ClientConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return nil, errors.New("transport stopped")
	}
	if c, ok := t.conns[addr]; ok {
		return c, nil
	}
	opts := wire.DialOptions(t.opts.BlockSize)
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	opts = append(opts, t.opts.DialOptions...)
	c, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, err
	}
	t.conns[addr] = c
	return c, nil
}

func (t *grpcTransport) Send(ctx context.Context, addr string, envs []*wire.Envelope) error {
	c, err := t.conn(addr)
	if err != nil {
		return err
	}
	_, err = wire.NewTransportClient(c).Send(ctx, &wire.SendRequest{Envelopes: envs})
	return err
}

// SendStream does not wait for a connection that is failing: unordered
// messages to a host that is down are dropped, not queued.
func (t *grpcTransport) SendStream(ctx context.Context, addr string) (SendConn, error) {
	c, err := t.conn(addr)
	if err != nil {
		return nil, err
	}
	return wire.NewTransportClient(c).SendStream(ctx)
}

func (t *grpcTransport) Stream(ctx context.Context, addr string) (StreamConn, error) {
	c, err := t.conn(addr)
	if err != nil {
		return nil, err
	}
	// Opening the stream waits for the connection to become ready, so a
	// peer that restarts is reached as soon as gRPC reconnects to it.
	return wire.NewTransportClient(c).Stream(ctx, grpc.WaitForReady(true))
}

// grpcService serves the Transport service to a Receiver.
type grpcService struct {
	wire.UnimplementedTransportServer
	r Receiver
}

func (s *grpcService) Send(_ context.Context, req *wire.SendRequest) (*wire.SendResponse, error) {
	s.r.Receive(req.GetEnvelopes())
	return &wire.SendResponse{}, nil
}

func (s *grpcService) SendStream(st wire.Transport_SendStreamServer) error {
	for {
		req, err := st.Recv()
		if err == io.EOF {
			return st.SendAndClose(&wire.SendResponse{})
		}
		if err != nil {
			return err
		}
		s.r.Receive(req.GetEnvelopes())
	}
}

func (s *grpcService) Stream(st wire.Transport_StreamServer) error { return s.r.ServeStream(st) }
