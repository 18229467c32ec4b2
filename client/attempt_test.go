package client

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/wire"
)

// slowBaseline serves a baseline's client API on three machines (all at
// one address) whose transactions take run each, from their start at
// every attempt, as a baseline machine runs a request sent to it again.
type slowBaseline struct {
	wire.UnimplementedClientServer
	addr     string
	run      time.Duration
	attempts atomic.Int64
}

func (s *slowBaseline) Status(context.Context, *wire.StatusRequest) (*wire.StatusResponse, error) {
	ms := make([]*wire.Machine, 3)
	for i := range ms {
		ms[i] = &wire.Machine{Index: int32(i), Addr: s.addr}
	}
	return &wire.StatusResponse{Protocol: "shardedpaxos", Machines: ms,
		Layout: &wire.Layout{N: 3, G: 2, F: 1, Stripes: 4, BlockSize: 16}}, nil
}

func (s *slowBaseline) Execute(ctx context.Context, req *wire.ExecuteRequest) (*wire.ExecuteResponse, error) {
	s.attempts.Add(1)
	select {
	case <-time.After(s.run):
		return &wire.ExecuteResponse{Seq: req.GetSeq()}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A baseline transaction that takes longer than the attempt timeout still
// finishes: each timed-out attempt doubles the next one's bound. With a
// fixed bound every attempt would start the transaction again and time
// out, until the caller's context ended.
func TestBaselineAttemptsGrow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := &slowBaseline{addr: ln.Addr().String(), run: 300 * time.Millisecond}
	srv := grpc.NewServer()
	wire.RegisterClientServer(srv, fake)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a safety stop only
	defer cancel()
	c, err := Dial(ctx, fake.addr, Options{AttemptTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Txn(ctx, []msg.Op{{Kind: msg.OpRead, Block: 0}}); err != nil {
		t.Fatalf("transaction of 300 ms with 50 ms attempts: %v after %d attempts", err, fake.attempts.Load())
	}
	// 50, 100, 200 ms time out; 400 ms is the first bound above 300 ms.
	if n := fake.attempts.Load(); n < 4 {
		t.Fatalf("%d attempts, want at least 4 (50, 100 and 200 ms time out)", n)
	}
}
