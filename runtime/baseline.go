package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	_ "github.com/amalgam-store/amalgam/baselines/wirecodec" // the baselines' messages on the wire
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// The protocols the runtime runs.
const (
	Amalgam      = "amalgam"
	ShardedPaxos = "shardedpaxos"
	RSPaxos      = "rspaxos"
)

// BaselineTiming is the baselines' timer settings on the runtime (unset
// fields of LocalOptions.PaxosTiming): slower than the simulator's
// defaults, so that a loaded machine moving large blocks over gRPC does
// not start elections; a machine's client tries the next member after
// 300-600 ms, well within the Go client's 2 s attempt timeout.
var BaselineTiming = paxos.Timing{Heartbeat: 100 * time.Millisecond, Election: 500 * time.Millisecond, Retry: 300 * time.Millisecond}

// Baseline is a baseline protocol's deployment (ShardedPaxos or RSPaxos,
// docs/baselines.md): its replicas, their placement on machines and its
// clients. The runtime and the benchmark harness's simulator both build
// deployments from it.
type Baseline struct {
	Protocol string
	Layout   erasure.Layout
	machines int
	members  int
	addr     func(g, i int) node.Addr
	machine  func(g, i int) int
	replica  func(g, i int) node.Node
	client   func(id uint64, script [][]msg.Op) BaselineClient
	// firstSeq numbers an outside request's first GET or PUT (RSPaxos
	// makes several per transaction; ShardedPaxos one).
	firstSeq func(seq uint64) uint64
	stored   func(node.Node) int64
}

// BaselineClient is a baseline's protocol client.
type BaselineClient interface {
	ClientNode
	Replies() []msg.Reply
	Leaders() []int
	SetLeaderGuess(g, i int)
	StartAt(seq uint64)
}

// NewBaseline describes protocol (ShardedPaxos or RSPaxos) on layout l:
// one Paxos group per shard of l, f from l, with timing tm (fields it
// leaves unset, zero or negative, from BaselineTiming).
func NewBaseline(protocol string, l erasure.Layout, tm paxos.Timing) (*Baseline, error) {
	b := &Baseline{Protocol: protocol, Layout: l, firstSeq: func(seq uint64) uint64 { return seq }}
	tm = tm.Or(BaselineTiming)
	switch protocol {
	case ShardedPaxos:
		cfg := shardedpaxos.Config{Layout: l, Timing: tm}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		b.machines, b.members, b.addr, b.machine = cfg.Machines(), cfg.Members(), cfg.Addr, cfg.Machine
		b.replica = func(g, i int) node.Node { return shardedpaxos.NewReplica(cfg, g, i) }
		b.client = func(id uint64, script [][]msg.Op) BaselineClient { return shardedpaxos.NewClient(id, cfg, script) }
		b.stored = func(n node.Node) int64 { return int64(n.(*shardedpaxos.Replica).StoredBytes()) }
	case RSPaxos:
		cfg := rspaxos.Config{Layout: l, Timing: tm}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		code, err := cfg.NewCode()
		if err != nil {
			return nil, err
		}
		b.machines, b.members, b.addr, b.machine = cfg.Machines(), cfg.Members(), cfg.Addr, cfg.Machine
		b.replica = func(g, i int) node.Node { return rspaxos.NewReplica(cfg, code, g, i) }
		b.client = func(id uint64, script [][]msg.Op) BaselineClient { return rspaxos.NewClient(id, cfg, script) }
		// A transaction makes at most 2*MaxTxnOps GETs and PUTs.
		b.firstSeq = func(seq uint64) uint64 { return seq * 2 * wire.MaxTxnOps }
		b.stored = func(n node.Node) int64 { return int64(n.(*rspaxos.Replica).StoredBytes()) }
	default:
		return nil, fmt.Errorf("unknown protocol %q (want %s, %s or %s)", protocol, Amalgam, ShardedPaxos, RSPaxos)
	}
	return b, nil
}

// Client returns client id (ids start at 1) running script.
func (b *Baseline) Client(id uint64, script [][]msg.Op) BaselineClient { return b.client(id, script) }

// StoredBytes is the bytes replica n stores.
func (b *Baseline) StoredBytes(n node.Node) int64 { return b.stored(n) }

// Machines is the number of machines the deployment needs.
func (b *Baseline) Machines() int { return b.machines }

// Members is the number of replicas per group.
func (b *Baseline) Members() int { return b.members }

// Hosted builds the replicas machine m hosts, with their addresses in
// group order.
func (b *Baseline) Hosted(m int) ([]node.Addr, []node.Node) {
	var as []node.Addr
	var ns []node.Node
	for g := 0; g < b.Layout.N; g++ {
		for i := 0; i < b.members; i++ {
			if b.machine(g, i) == m {
				as, ns = append(as, b.addr(g, i)), append(ns, b.replica(g, i))
			}
		}
	}
	return as, ns
}

// BaselineMachine is one machine of a baseline deployment: a host running
// its replicas and serving the client API. Every machine accepts requests
// for every block: it runs the protocol's client for the request, which
// finds the group's leader (baselines have no reconfiguration service).
type BaselineMachine struct {
	*Host
	wire.UnimplementedClientServer
	b          *Baseline
	me         int
	machines   []string
	durability string
	store      *Store      // nil in memory
	replicas   []node.Addr // hosted here, in group order
	nonce      atomic.Uint64
	mu         sync.Mutex
	leaders    []int // the leader each group was last found at
}

// baselineResolve maps an address ending in "/<machine>" (replicas and
// the clients RunClient runs) to that machine's host.
func baselineResolve(machines []string) func(node.Addr) (string, bool) {
	return func(a node.Addr) (string, bool) {
		i := strings.LastIndexByte(string(a), '/')
		m, err := strconv.Atoi(string(a)[i+1:])
		if i < 0 || err != nil || m < 0 || m >= len(machines) {
			return "", false
		}
		return machines[m], true
	}
}

// StartBaselineMachine starts machine me of b; machines lists every
// machine's host:port. With durability "durable" the machine keeps its
// replicas (node.Persistent) in a synced pebble store in o.Dir, on o.FS,
// as an Amalgam machine does, and restarts them from what it holds there;
// with "memory" they persist nothing.
func StartBaselineMachine(b *Baseline, me int, machines []string, durability string, o MachineOptions) (*BaselineMachine, error) {
	if len(machines) != b.machines || me < 0 || me >= b.machines {
		return nil, fmt.Errorf("%s on this layout needs %d machines", b.Protocol, b.machines)
	}
	if err := b.checkDurability(durability); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bm := &BaselineMachine{b: b, me: me, machines: machines, durability: durability, leaders: make([]int, b.Layout.N)}
	if durability == "durable" {
		st, err := o.openStore()
		if err != nil {
			return nil, err
		}
		bm.store = st
	}
	bm.Host = NewHost(Options{Listener: o.Listener, Resolve: baselineResolve(machines), BlockSize: b.Layout.BlockSize,
		Store: bm.store, Logger: log.With("machine", me), ServerOptions: o.ServerOptions, DialOptions: o.DialOptions,
		Register: o.Register, Metrics: o.Metrics})
	as, ns := b.Hosted(me)
	for i, a := range as {
		if err := bm.AddNode(a, ns[i]); err != nil {
			bm.closeStore()
			return nil, err
		}
	}
	bm.replicas = as
	bm.SetClientServer(bm)
	bm.Start()
	return bm, nil
}

// checkDurability refuses a durability the protocol's replicas cannot
// give.
func (b *Baseline) checkDurability(durability string) error {
	switch durability {
	case "memory":
		return nil
	case "durable":
		if _, ok := b.replica(0, 0).(node.Persistent); !ok {
			return fmt.Errorf("%s persists nothing (its replicas are not node.Persistent): use durability memory", b.Protocol)
		}
		return nil
	}
	return fmt.Errorf("durability must be durable or memory, got %q", durability)
}

// Close stops the machine and closes its store.
func (bm *BaselineMachine) Close() {
	bm.Stop()
	bm.closeStore()
}

func (bm *BaselineMachine) closeStore() { closeStore(&bm.store) }

// Execute implements the client API: it runs the protocol's client for
// the request at "proxy/<client>.<n>/<machine>" and returns its reply.
func (bm *BaselineMachine) Execute(ctx context.Context, req *wire.ExecuteRequest) (*wire.ExecuteResponse, error) {
	ops, _, err := wire.DecodeExecute(req, bm.b.Layout)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	bm.mu.Lock()
	leaders := append([]int(nil), bm.leaders...)
	bm.mu.Unlock()
	c := bm.b.client(req.GetClientId(), [][]msg.Op{ops})
	c.StartAt(bm.b.firstSeq(req.GetSeq()))
	for g, i := range leaders {
		c.SetLeaderGuess(g, i)
	}
	a := node.Addr(fmt.Sprintf("proxy/%d.%d/%d", req.GetClientId(), bm.nonce.Add(1), bm.me))
	err = bm.RunClient(ctx, a, c)
	// Keep what the client learned even if it timed out: it moved past
	// members that did not answer, and the next request starts there.
	bm.mu.Lock()
	bm.leaders = c.Leaders()
	bm.mu.Unlock()
	if err != nil {
		return nil, ctxStatus(err)
	}
	r := c.Replies()[0]
	if r.Err != "" {
		return nil, status.Error(codes.InvalidArgument, r.Err)
	}
	return &wire.ExecuteResponse{Seq: req.GetSeq(), Results: wire.ResultsToProto(r.Outcome.Results), Aborted: r.Outcome.Aborted}, nil
}

// Status implements the client API: the deployment and this machine's
// replicas.
func (bm *BaselineMachine) Status(ctx context.Context, _ *wire.StatusRequest) (*wire.StatusResponse, error) {
	r := baselineStatus(bm.b, bm.machines, bm.durability)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, a := range bm.replicas {
		var bytes int64
		if bm.Inspect(ctx, a, func(n node.Node) { bytes = bm.b.stored(n) }) == nil {
			r.Nodes = append(r.Nodes, &wire.NodeStatus{Addr: string(a), BytesStored: bytes})
		}
	}
	return r, nil
}

// StoredBytes sums the bytes this machine's replicas store.
func (bm *BaselineMachine) StoredBytes(ctx context.Context) int64 {
	var sum int64
	for _, a := range bm.replicas {
		_ = bm.Inspect(ctx, a, func(n node.Node) { sum += bm.b.stored(n) })
	}
	return sum
}

func baselineStatus(b *Baseline, machines []string, durability string) *wire.StatusResponse {
	r := &wire.StatusResponse{Protocol: b.Protocol, Durability: durability, Layout: wire.LayoutToProto(b.Layout)}
	for m, a := range machines {
		r.Machines = append(r.Machines, &wire.Machine{Index: int32(m), Addr: a})
	}
	return r
}

// baselineEntry serves Status at a baseline cluster's entry address.
type baselineEntry struct {
	wire.UnimplementedClientServer
	b          *Baseline
	machines   []string
	durability string
}

func (e *baselineEntry) Status(context.Context, *wire.StatusRequest) (*wire.StatusResponse, error) {
	return baselineStatus(e.b, e.machines, e.durability), nil
}

func (e *baselineEntry) Execute(context.Context, *wire.ExecuteRequest) (*wire.ExecuteResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "this is the entry address: send operations to a machine (see Status)")
}

// BaselineLocal is a baseline deployment in one process.
type BaselineLocal struct {
	Baseline  *Baseline
	Machines  []*BaselineMachine
	EntryAddr string
	entry     *grpc.Server
}

// StartBaselineLocal starts protocol on o.Layout: the entry address and
// Baseline.Machines machines on the ports after it (as StartLocal). With
// o.Durability "durable", machine m keeps its store in
// o.DataDir/machine-<m> (on o.FS) and restarts its replicas from it.
func StartBaselineLocal(protocol string, o LocalOptions) (*BaselineLocal, error) {
	b, err := NewBaseline(protocol, o.Layout, o.PaxosTiming)
	if err != nil {
		return nil, err
	}
	if err := b.checkDurability(o.Durability); err != nil {
		return nil, err
	}
	entryLn, lns, err := listenLocal(o.Addr, b.machines)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, ln := range lns {
		addrs = append(addrs, ln.Addr().String())
	}
	bl := &BaselineLocal{Baseline: b, EntryAddr: entryLn.Addr().String()}
	for m := range lns {
		bm, err := StartBaselineMachine(b, m, addrs, o.Durability, MachineOptions{Listener: lns[m],
			Dir: filepath.Join(o.DataDir, fmt.Sprintf("machine-%d", m)), FS: o.FS, Logger: o.Logger,
			ServerOptions: o.ServerOptions, DialOptions: o.DialOptions, Register: o.Register, Metrics: o.Metrics})
		if err != nil {
			bl.Close()
			closeListeners(append(lns[m:], entryLn))
			return nil, fmt.Errorf("machine %d: %w", m, err)
		}
		bl.Machines = append(bl.Machines, bm)
	}
	bl.entry = serveEntry(entryLn, &baselineEntry{b: b, machines: addrs, durability: o.Durability}, o)
	return bl, nil
}

// Close stops every machine and closes its store.
func (bl *BaselineLocal) Close() {
	if bl.entry != nil {
		bl.entry.Stop()
	}
	for _, m := range bl.Machines {
		m.Close()
	}
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// Replicas lists the replicas the machine hosts, space-separated.
func (bm *BaselineMachine) Replicas() string {
	var as []string
	for _, a := range bm.replicas {
		as = append(as, string(a))
	}
	return strings.Join(as, " ")
}
