package runtime

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/wire"
	"github.com/amalgam-store/amalgam/witness"
)

// Cluster is a machine's view of the cluster: the layout (in Config) and
// the address book, which host serves each machine slot. With a
// reconfiguration service (Reconfig), the address book follows the
// service's (directory.go); without one it is static.
type Cluster struct {
	Config     msg.Config
	Machines   []string // host:port of machine m
	Durability string   // "durable" or "memory"
	// Reconfig lists the reconfiguration service's replicas (host:port).
	Reconfig []string

	mu      sync.RWMutex // guards Machines, spares and version once machines run
	spares  []string
	version uint64
}

// Resolve maps "data/m", "parity/m" and "witness/m" to machine m.
func (c *Cluster) Resolve(a node.Addr) (string, bool) {
	role, m, err := msg.ParseAddr(a)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if err != nil || m >= len(c.Machines) {
		return "", false
	}
	switch role {
	case "data", "parity", "witness":
		return c.Machines[m], true
	}
	return "", false
}

// StatusProto describes the cluster on the wire.
func (c *Cluster) StatusProto() *wire.StatusResponse {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r := &wire.StatusResponse{ConfigNum: c.Config.Num, Durability: c.Durability, Layout: wire.LayoutToProto(c.Config.Layout)}
	for m, a := range c.Machines {
		r.Machines = append(r.Machines, &wire.Machine{Index: int32(m), Addr: a,
			DataIncarnation: c.Config.Data[m], ParityIncarnation: c.Config.Parity[m], WitnessIncarnation: c.Config.Witness[m]})
	}
	return r
}

// LayoutFromProto converts and validates a wire layout.
func LayoutFromProto(p *wire.Layout) (erasure.Layout, error) {
	l := erasure.Layout{N: int(p.GetN()), G: int(p.GetG()), F: int(p.GetF()), W: int(p.GetW()),
		Stripes: int(p.GetStripes()), BlockSize: int(p.GetBlockSize())}
	return l, l.Validate()
}

// MachineOptions configure one machine.
type MachineOptions struct {
	// Listener serves the machine's gRPC; required.
	Listener net.Listener
	// Dir holds the machine's pebble store; ignored in memory mode.
	Dir string
	// FS is the file system of the store; nil is the OS's.
	FS            vfs.FS
	Logger        *slog.Logger
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	Register      func(*grpc.Server)
	Metrics       Metrics
	// The rest matters with a reconfiguration service (Cluster.Reconfig);
	// see directory.go.
	//
	// Joining: this host takes over the machine slot from another (a
	// spare): it runs only the servers it stored or that a NewConfig
	// starts, never a fresh copy of an old incarnation.
	Joining bool
	// Self is the host:port peers reach this machine at (default: the
	// listener's address).
	Self string
	// HeartbeatEvery is how often the machine tells the reconfiguration
	// service it is alive (default 200ms).
	HeartbeatEvery time.Duration
	// OnEvicted is called once if the address book gives this machine's
	// slot to another host (it was replaced); the machine stops serving.
	OnEvicted func(machine int, host string)
	// OnAssigned is called when a spare is given a machine slot.
	OnAssigned func(machine int)
	// RebuildPause is how long data and parity servers wait between the
	// stripes they rebuild in the background (0: no wait); see
	// RebuildPauseFor.
	RebuildPause time.Duration
	// RebuildWindow is how many snapshot runs a data server's background
	// rebuild keeps in flight when there is no pause (0:
	// DefaultRebuildWindow).
	RebuildWindow int
	// RebuildRun is how many stripes one background snapshot run of a
	// data or parity server covers (0: DefaultRebuildRunBytes of blocks;
	// at most MaxRebuildRun).
	RebuildRun int
	// RebuildBusyRate is the rate in blocks per second a data server's
	// rebuild (its background runs and, counted against them, its runs
	// for held requests) keeps to while the server has client work, when
	// RebuildPause is 0 (0: DefaultRebuildBusyRate, at most
	// DefaultRebuildBusyBytes of blocks a second; negative: no limit).
	RebuildBusyRate float64
	// RebuildHeldRun is how many stripes a data server's snapshot run for
	// a held request covers (0: as many as a background run;
	// bounded as RebuildRun is).
	RebuildHeldRun int
}

// DefaultRebuildWindow is MachineOptions.RebuildWindow's default: requests
// for blocks not yet rebuilt wait for their stripe, so the sooner the rest
// is rebuilt the fewer wait.
const DefaultRebuildWindow = 8

// RebuildPauseFor converts a rebuild rate limit to the pause per stripe:
// a data or parity server rebuilds one block per stripe, and after a run
// of k stripes waits k times the pause, so blocksPerSec blocks/s is a
// pause of 1/blocksPerSec (0 or less: no limit). The pause comes on top of
// the time a run takes to rebuild, so the rate reached is at most the
// limit.
func RebuildPauseFor(blocksPerSec float64) time.Duration {
	if blocksPerSec <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / blocksPerSec)
}

// Machine is one running machine: data, parity and witness servers.
type Machine struct {
	*Host
	wire.UnimplementedClientServer
	replies
	cl    *Cluster
	me    atomic.Int64 // the machine slot served; -1 for a spare not yet assigned
	store *Store
	code  *erasure.Code
	o     MachineOptions
	self  string
	hb    chan struct{} // closed to stop heartbeats
	hbWG  sync.WaitGroup
	once  sync.Once
}

// StartMachine starts machine me of cl; me -1 starts a spare, which serves
// no slot until the reconfiguration service assigns it one.
func StartMachine(cl *Cluster, me int, code *erasure.Code, o MachineOptions) (*Machine, error) {
	mc := &Machine{cl: cl, code: code, o: o, self: o.Self, hb: make(chan struct{})}
	mc.me.Store(int64(me))
	if mc.self == "" {
		mc.self = o.Listener.Addr().String()
	}
	if cl.Durability != "memory" {
		st, err := o.openStore()
		if err != nil {
			return nil, err
		}
		mc.store = st
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hopts := Options{Listener: o.Listener, Resolve: cl.Resolve, BlockSize: cl.Config.Layout.BlockSize,
		Store: mc.store, Logger: log.With("machine", me), ServerOptions: o.ServerOptions, DialOptions: o.DialOptions,
		Register: mc.registerOnline(o.Register), Metrics: o.Metrics, Local: mc.takeReply}
	if len(cl.Reconfig) > 0 {
		hopts.Multicast = cl.multicast
		hopts.NewNode = mc.newNode
	}
	mc.Host = NewHost(hopts)
	nodes, err := mc.initialNodes(me)
	if err != nil {
		mc.closeStore()
		return nil, err
	}
	for a, n := range nodes {
		if err := mc.AddNode(a, n); err != nil {
			mc.closeStore()
			return nil, err
		}
	}
	mc.SetClientServer(mc)
	mc.Start()
	if len(cl.Reconfig) > 0 {
		mc.hbWG.Add(1)
		go mc.heartbeat()
	}
	return mc, nil
}

// Close stops the machine and closes its store.
func (mc *Machine) Close() {
	mc.once.Do(func() {
		close(mc.hb)
		mc.hbWG.Wait()
		mc.Stop()
		mc.closeStore()
	})
}

func (mc *Machine) closeStore() { closeStore(&mc.store) }

// openStore opens the machine's synced store in o.Dir, on o.FS.
func (o MachineOptions) openStore() (*Store, error) {
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	return OpenStoreFS(fs, filepath.Clean(o.Dir), true)
}

// closeStore closes *st, if open, and forgets it.
func closeStore(st **Store) {
	if *st != nil {
		_ = (*st).Close()
		*st = nil
	}
}

// ClientAddr is the node address the runtime gives a client's requests.
func ClientAddr(id uint64) node.Addr { return node.Addr("client/" + strconv.FormatUint(id, 10)) }

// Execute implements the client API: it hands the request to the local
// data server as coming from "client/<id>" and waits for the reply.
func (mc *Machine) Execute(ctx context.Context, req *wire.ExecuteRequest) (*wire.ExecuteResponse, error) {
	cfg := mc.cl.Config
	ops, shard, err := wire.DecodeExecute(req, cfg.Layout)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	// config_num is not checked: routing follows the address book, which
	// configurations do not change (directory.go).
	me := mc.Slot()
	if shard != me {
		return nil, status.Errorf(codes.FailedPrecondition, "ops[0].block: block %d is on machine %d, and this host serves machine %d; refresh the layout", ops[0].Block, shard, me)
	}
	if t := stageNow(); !t.IsZero() {
		defer stageSince("execute", t)
	}
	from := ClientAddr(req.GetClientId())
	ch, cancel := mc.Wait(from, req.GetSeq())
	defer cancel()
	if err := mc.Deliver(ctx, from, msg.DataAddr(me), msg.Request{Client: req.GetClientId(), Seq: req.GetSeq(), Ops: ops}); err != nil {
		return nil, ctxStatus(err)
	}
	select {
	case m := <-ch:
		r := m.(msg.Reply)
		if r.Err != "" {
			return nil, status.Error(codes.InvalidArgument, r.Err)
		}
		return &wire.ExecuteResponse{Seq: r.Seq, Results: wire.ResultsToProto(r.Outcome.Results), Aborted: r.Outcome.Aborted}, nil
	case <-ctx.Done():
		return nil, ctxStatus(ctx.Err())
	}
}

func ctxStatus(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded before the operation committed (it may still commit; retry with the same seq)")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "canceled")
	}
	return status.Error(codes.Unavailable, err.Error())
}

// Status implements the client API: the cluster description plus the
// state of this machine's nodes.
func (mc *Machine) Status(ctx context.Context, _ *wire.StatusRequest) (*wire.StatusResponse, error) {
	r := mc.cl.StatusProto()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, s := range mc.NodeStats(ctx) {
		r.Nodes = append(r.Nodes, &wire.NodeStatus{Addr: string(s.Addr), NextOpNum: s.NextOpNum,
			PendingOps: int64(s.PendingOps), BlocksStored: int64(s.BlocksStored),
			Incarnation: s.Incarnation, ConfigNum: s.ConfigNum, DegradedBlocks: int64(s.DegradedBlocks), BytesStored: s.BytesStored})
	}
	return r, nil
}

// NodeStat is the state of one node a machine hosts.
type NodeStat struct {
	Addr node.Addr
	// NextOpNum is a data server's next op_num (0 for other nodes).
	NextOpNum uint64
	// PendingOps counts a data server's operations in pending_ops (not
	// yet acknowledged by every backup), or the PREPAREs a parity server
	// or witness holds.
	PendingOps int
	// BlocksStored counts the data or parity blocks the node stores;
	// BytesStored is their size.
	BlocksStored int
	BytesStored  int64
	// Incarnation and ConfigNum: the server's incarnation and the
	// configuration it is in; DegradedBlocks: blocks it has not rebuilt.
	Incarnation    uint64
	ConfigNum      uint64
	DegradedBlocks int
	// Held counts the requests a data server holds until the blocks they
	// need are rebuilt.
	Held int
	// BlockSize is the layout's block size in bytes.
	BlockSize int
	// Fenced lists the servers this one has fenced for a replacement in
	// progress (until the next configuration): a data server's stopped
	// backups, a parity server's or witness's stopped data servers.
	Fenced []node.Addr
}

// NodeStats inspects the machine's nodes, in the order data, parity,
// witness, skipping those that do not answer before ctx ends.
func (mc *Machine) NodeStats(ctx context.Context) []NodeStat {
	var out []NodeStat
	me := mc.Slot()
	if me < 0 {
		return nil
	}
	for _, a := range []node.Addr{msg.DataAddr(me), msg.ParityAddr(me), msg.WitnessAddr(me)} {
		s := NodeStat{Addr: a}
		err := mc.Inspect(ctx, a, func(n node.Node) {
			if x, ok := n.(node.Incarnated); ok {
				s.Incarnation = x.Incarnation()
			}
			s.ConfigNum = configNum(n)
			if d, ok := n.(interface{ DegradedBlocks() int }); ok {
				s.DegradedBlocks = d.DegradedBlocks()
			}
			if f, ok := n.(interface{ Fenced() []node.Addr }); ok {
				s.Fenced = f.Fenced()
			}
			switch n := n.(type) {
			case *data.Server:
				s.NextOpNum = n.NextOpNum()
				s.PendingOps = n.PendingOps()
				s.BlocksStored = n.Stored()
				s.Held = n.Held()
			case *parity.Server:
				s.PendingOps = len(n.Prepares())
				s.BlocksStored = n.Stored()
			case *witness.Server:
				s.PendingOps = len(n.Prepares())
			}
		})
		if err == nil {
			s.BlockSize = mc.cl.Config.Layout.BlockSize
			s.BytesStored = int64(s.BlocksStored) * int64(s.BlockSize)
			out = append(out, s)
		}
	}
	return out
}

// StatusServer serves the cluster description at the entry address (the
// reconfiguration endpoint, static for now).
type StatusServer struct {
	wire.UnimplementedClientServer
	Cluster *Cluster
}

// Status implements the client API.
func (s *StatusServer) Status(context.Context, *wire.StatusRequest) (*wire.StatusResponse, error) {
	return s.Cluster.StatusProto(), nil
}

// Execute implements the client API: operations go to machines.
func (s *StatusServer) Execute(context.Context, *wire.ExecuteRequest) (*wire.ExecuteResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "this is the configuration endpoint: send operations to the data server of the block's shard (see Status)")
}

// configNum is the configuration a server is in, for NodeStats.
func configNum(n node.Node) uint64 {
	if c, ok := n.(interface{ ConfigNum() uint64 }); ok {
		return c.ConfigNum()
	}
	return 0
}
