package harness

import (
	"fmt"
	"time"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/witness"
	"github.com/amalgam-store/amalgam/workload"
)

// The systems the harness compares.
const (
	Amalgam      = runtime.Amalgam
	ShardedPaxos = runtime.ShardedPaxos
	RSPaxos      = runtime.RSPaxos
)

// Systems lists them in report order.
var Systems = []string{Amalgam, ShardedPaxos, RSPaxos}

// Timing used by every system in benchmarks: long enough that a loaded
// 2-core machine does not trigger elections or client retries that a
// real deployment would not see. The baselines' heartbeats also
// retransmit every unanswered accept request; at their default 20 ms
// period a leader whose link is busy for longer than that (a 1 MiB
// accept request to 4 members takes 75 ms on a 56 MB/s link) resends
// faster than it can send and stops making progress, so benchmarks use
// 250 ms.
const (
	benchHeartbeat = 250 * time.Millisecond
	benchElection  = time.Second
	benchRetry     = 5 * time.Second
)

var benchTiming = paxos.Timing{Heartbeat: benchHeartbeat, Election: benchElection, Retry: benchRetry}

// deployment is one system's nodes on a network.
type deployment struct {
	system   string
	layout   erasure.Layout
	net      *Net
	machines int
	// newClient makes the protocol client node for client id running
	// script.
	newClient func(id uint64, script [][]msg.Op) clientNode
	// stored sums the bytes the servers store (after Stop).
	stored func() int64
}

// clientNode is the protocol client the driver wraps.
type clientNode interface {
	node.Node
	Done() bool
	Replies() []msg.Reply
}

// machinesFor is the number of server machines a system gets: one per
// data server for Amalgam; the baselines' Config.Machines (one per group,
// but at least one per member of a group).
func machinesFor(system string, l erasure.Layout) int {
	if b, err := runtime.NewBaseline(system, l, benchTiming); err == nil {
		return b.Machines()
	}
	return l.N
}

func deploy(system string, l erasure.Layout, opt NetOptions) (*deployment, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	d := &deployment{system: system, layout: l, machines: machinesFor(system, l)}
	d.net = NewNet(d.machines, l.BlockSize, opt)
	switch system {
	case Amalgam:
		cfg := msg.InitialConfig(l)
		code, err := erasure.NewCode(l.G, l.F)
		if err != nil {
			return nil, err
		}
		var ds []*data.Server
		var ps []*parity.Server
		for m := 0; m < l.N; m++ {
			dsv, psv := data.New(cfg, m), parity.New(cfg, m, code)
			ds, ps = append(ds, dsv), append(ps, psv)
			d.net.Add(msg.DataAddr(m), m, dsv)
			d.net.Add(msg.ParityAddr(m), m, psv)
			if l.W > 0 {
				d.net.Add(msg.WitnessAddr(m), m, witness.New(cfg, m))
			}
		}
		d.newClient = func(id uint64, script [][]msg.Op) clientNode {
			return amalgamClient{workload.NewClient(id, l, script)}
		}
		d.stored = func() int64 {
			var n int64
			for i := range ds {
				n += int64(ds[i].Stored()+ps[i].Stored()) * int64(l.BlockSize)
			}
			return n
		}
	case ShardedPaxos, RSPaxos:
		b, err := runtime.NewBaseline(system, l, benchTiming)
		if err != nil {
			return nil, err
		}
		var rs []node.Node
		for m := 0; m < b.Machines(); m++ {
			as, ns := b.Hosted(m)
			for i, a := range as {
				d.net.Add(a, m, ns[i])
			}
			rs = append(rs, ns...)
		}
		d.newClient = func(id uint64, script [][]msg.Op) clientNode { return b.Client(id, script) }
		d.stored = func() int64 {
			var n int64
			for _, r := range rs {
				n += b.StoredBytes(r)
			}
			return n
		}
	default:
		return nil, fmt.Errorf("unknown system %q (want %s, %s or %s)", system, Amalgam, ShardedPaxos, RSPaxos)
	}
	return d, nil
}

// amalgamClient is workload.Client with the benchmark's retry timeout
// (workload.Client retries after 50-100 ms, which a loaded 2-core machine
// exceeds, and the baselines' clients get the same timeout): it runs the
// client's handlers with a context that sets every timer to benchRetry to
// 2*benchRetry.
type amalgamClient struct{ *workload.Client }

// benchTimers is the context amalgamClient's handlers see.
type benchTimers struct{ node.Context }

func (c benchTimers) SetTimer(t node.Timer, _, _ time.Duration) {
	c.Context.SetTimer(t, benchRetry, 2*benchRetry)
}

func (c amalgamClient) Init(ctx node.Context) { c.Client.Init(benchTimers{ctx}) }
func (c amalgamClient) Handle(ctx node.Context, from node.Addr, m node.Message) {
	c.Client.Handle(benchTimers{ctx}, from, m)
}
func (c amalgamClient) Timer(ctx node.Context, t node.Timer) { c.Client.Timer(benchTimers{ctx}, t) }
func (c amalgamClient) Clone() node.Node {
	return amalgamClient{c.Client.Clone().(*workload.Client)}
}
