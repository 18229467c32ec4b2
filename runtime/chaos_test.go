package runtime

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
	"github.com/amalgam-store/amalgam/workload"
)

// resetProxy forwards TCP connections to target and resets each one
// (RST, not FIN) after a random lifetime in [minLife, maxLife].
type resetProxy struct {
	ln               net.Listener
	target           string
	minLife, maxLife time.Duration
	resets           atomic.Int64
	calm             atomic.Bool // stop resetting new connections
	wg               sync.WaitGroup
}

func newResetProxy(t *testing.T, target string, minLife, maxLife time.Duration) *resetProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &resetProxy{ln: ln, target: target, minLife: minLife, maxLife: maxLife}
	p.wg.Go(p.serve)
	return p
}

func (p *resetProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *resetProxy) handle(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	life := p.minLife + time.Duration(rand.Int64N(int64(p.maxLife-p.minLife)+1))
	if p.calm.Load() {
		life = time.Hour
	}
	timer := time.AfterFunc(life, func() {
		p.resets.Add(1)
		for _, x := range []net.Conn{c, s} {
			if tc, ok := x.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close sends RST
			}
			_ = x.Close()
		}
	})
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
	timer.Stop()
	_ = c.Close()
	_ = s.Close()
	<-done
}

func (p *resetProxy) close() { _ = p.ln.Close(); p.wg.Wait() }

type countMetrics struct{ reconnects atomic.Int64 }

func (m *countMetrics) StreamReconnect(node.Addr, node.Addr) { m.reconnects.Add(1) }
func (m *countMetrics) BatchCommitted(int, time.Duration)    {}
func (m *countMetrics) EventRefused(node.Addr)               {}

// startProxied starts a cluster whose machines reach each other only
// through reset proxies.
func startProxied(t *testing.T, l erasure.Layout, durability string, minLife, maxLife time.Duration) (*Local, []*resetProxy, *countMetrics) {
	t.Helper()
	cl := &Cluster{Config: msg.InitialConfig(l), Durability: durability}
	var lns []net.Listener
	var proxies []*resetProxy
	for m := 0; m < l.N; m++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		p := newResetProxy(t, ln.Addr().String(), minLife, maxLife)
		proxies = append(proxies, p)
		cl.Machines = append(cl.Machines, p.ln.Addr().String())
	}
	code, err := erasure.NewCode(l.G, l.F)
	if err != nil {
		t.Fatal(err)
	}
	met := &countMetrics{}
	lc := &Local{Cluster: cl}
	dir := t.TempDir()
	for m := 0; m < l.N; m++ {
		mc, err := StartMachine(cl, m, code, MachineOptions{Listener: lns[m], Dir: dir + "/m" + string(rune('0'+m)), Metrics: met})
		if err != nil {
			t.Fatal(err)
		}
		lc.Machines = append(lc.Machines, mc)
	}
	entry, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lc.entry = grpc.NewServer()
	wire.RegisterClientServer(lc.entry, &StatusServer{Cluster: cl})
	go func() { _ = lc.entry.Serve(entry) }()
	lc.EntryAddr = entry.Addr().String()
	return lc, proxies, met
}

// TestStreamsSurviveResets runs concurrent clients while a proxy resets
// every machine-to-machine connection at random. Streams must resume
// without loss or duplication: the history stays linearizable (adds and
// xors applied twice or lost would show), and every stripe's parity ends
// up equal to the encoding of its data.
func TestStreamsSurviveResets(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 5, BlockSize: 32}
	// The test runs until target operations have completed and streams
	// have reconnected at least once; hangGuard only stops a hung run.
	minLife, maxLife, target := 20*time.Millisecond, 150*time.Millisecond, int64(200)
	if testing.Short() { // CI runs -short under the race detector, about 10x slower
		minLife, maxLife, target = 100*time.Millisecond, 400*time.Millisecond, 60
	}
	const hangGuard = 5 * time.Minute
	lc, proxies, met := startProxied(t, l, "memory", minLife, maxLife)
	defer func() {
		lc.Close()
		for _, p := range proxies {
			p.close()
		}
	}()
	const clients = 4
	var mu sync.Mutex
	var history []porcupine.Operation
	var completed atomic.Int64
	enough := func() bool { return completed.Load() >= target && met.reconnects.Load() > 0 }
	var wg sync.WaitGroup
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for i := 0; i < clients; i++ {
		wg.Go(func() {
			c, err := client.Dial(ctx, lc.EntryAddr, client.Options{AttemptTimeout: 300 * time.Millisecond})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			rnd := rand.New(rand.NewPCG(uint64(i), 7))
			// Few blocks, so clients contend.
			script := workload.Generate(rnd.Uint64, l, 6, 100000, workload.DefaultMix)
			for _, ops := range script {
				if enough() {
					return
				}
				call := time.Since(start).Nanoseconds()
				out, err := c.Txn(ctx, ops)
				ret := time.Since(start).Nanoseconds()
				if err != nil {
					t.Errorf("client %d after %d operations in all: %v", i, completed.Load(), err)
					return
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: i, Input: ops, Call: call, Output: msg.Reply{Outcome: out}, Return: ret})
				mu.Unlock()
				completed.Add(1)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var resets int64
	for _, p := range proxies {
		resets += p.resets.Load()
	}
	t.Logf("%d operations, %d connection resets, %d stream reconnects", len(history), resets, met.reconnects.Load())
	if resets == 0 || met.reconnects.Load() == 0 {
		t.Fatalf("the proxies reset %d connections and streams reconnected %d times; the test exercised nothing", resets, met.reconnects.Load())
	}
	if int64(len(history)) < target {
		t.Fatalf("only %d of %d operations completed", len(history), target)
	}
	v := workload.Check(l, history)
	t.Log(v)
	if p := v.Problem(); p != "" {
		t.Fatal(p)
	}
	for _, p := range proxies {
		p.calm.Store(true) // let the stripes settle
	}
	waitParityConsistent(t, lc)
}

// TestInvalidArgument sends malformed requests straight to a machine: each
// is refused with InvalidArgument and a message naming the bad field, and
// nothing is applied.
func TestInvalidArgument(t *testing.T) {
	lc := startLocal(t, testLayout, "memory", "")
	defer lc.Close()
	l := testLayout
	cc, err := grpc.NewClient(lc.Cluster.Machines[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	api := wire.NewClientClient(cc)
	b0 := l.ShardBlocks(0)[0]
	other := l.ShardBlocks(1)[0]
	op := func(k wire.OpKind, block uint64, mod func(*wire.Op)) *wire.Op {
		o := &wire.Op{Kind: k, Block: block}
		if mod != nil {
			mod(o)
		}
		return o
	}
	cases := []struct {
		req   *wire.ExecuteRequest
		field string
	}{
		{&wire.ExecuteRequest{Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_READ, b0, nil)}}, "client_id"},
		{&wire.ExecuteRequest{ClientId: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_READ, b0, nil)}}, "seq"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1}, "ops"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(0, b0, nil)}}, "ops[0].kind"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(99, b0, nil)}}, "ops[0].kind"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_READ, l.NumBlocks(), nil)}}, "ops[0].block"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_READ, b0, func(o *wire.Op) { o.Offset = -1 })}}, "ops[0].offset"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_READ, b0, func(o *wire.Op) { o.Offset = int64(l.BlockSize) })}}, "ops[0].offset"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_READ, b0, func(o *wire.Op) { o.Length = int64(l.BlockSize) + 1 })}}, "ops[0].length"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_WRITE, b0, func(o *wire.Op) { o.Data = make([]byte, l.BlockSize+1) })}}, "ops[0].data"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_WRITE, b0, nil)}}, "ops[0].data"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_ADD, b0, func(o *wire.Op) { o.Offset = int64(l.BlockSize) - 4 })}}, "ops[0].offset"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_CAS, b0, func(o *wire.Op) { o.Data = []byte{1} })}}, "ops[0].expect"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_CAS, b0, func(o *wire.Op) { o.Expect = []byte{1}; o.Data = []byte{1, 2} })}}, "ops[0].data"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_CHECK, b0, nil)}}, "ops[0].expect"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{
			op(wire.OpKind_OP_KIND_WRITE, b0, func(o *wire.Op) { o.Data = []byte{1} }),
			op(wire.OpKind_OP_KIND_WRITE, other, func(o *wire.Op) { o.Data = []byte{1} })}}, "ops[1].block"},
		{&wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: make([]*wire.Op, wire.MaxTxnOps+1)}, "ops"},
	}
	for i, tc := range cases {
		_, err := api.Execute(context.Background(), tc.req)
		s, _ := status.FromError(err)
		if s.Code() != codes.InvalidArgument || !strings.HasPrefix(s.Message(), tc.field+": ") {
			t.Errorf("case %d: got %v, want InvalidArgument naming %s", i, err, tc.field)
		}
	}
	// Nothing was applied: block b0 is still zeros, and client 1's first
	// real request (seq 1) is not mistaken for a duplicate.
	out, err := api.Execute(context.Background(), &wire.ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_READ, b0, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range out.GetResults()[0].GetData() {
		if x != 0 {
			t.Fatalf("block %d changed: %x", b0, out.GetResults()[0].GetData())
		}
	}
	// A request for another machine's shard is refused for routing.
	_, err = api.Execute(context.Background(), &wire.ExecuteRequest{ClientId: 2, Seq: 1, Ops: []*wire.Op{op(wire.OpKind_OP_KIND_READ, other, nil)}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("wrong shard: got %v, want FailedPrecondition", err)
	}
}
