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
			return &amalgamClient{id: id, layout: l, script: script}
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
// exceeds, and the baselines' clients get the same timeout).
type amalgamClient struct {
	id      uint64
	layout  erasure.Layout
	script  [][]msg.Op
	next    int
	replies []msg.Reply
}

type amalgamRetry struct{ Seq uint64 }

func (t amalgamRetry) Hash(h *node.Hasher) { h.Tag(node.TagBenchRetry); h.Uint64(t.Seq) }

func (c *amalgamClient) Init(ctx node.Context) { c.send(ctx) }

func (c *amalgamClient) send(ctx node.Context) {
	if c.Done() {
		return
	}
	ops := c.script[c.next]
	seq := uint64(c.next + 1)
	ctx.Send(msg.DataAddr(c.layout.Shard(ops[0].Block)), msg.Request{Client: c.id, Seq: seq, Ops: ops})
	ctx.SetTimer(amalgamRetry{Seq: seq}, benchRetry, 2*benchRetry)
}

func (c *amalgamClient) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	r, ok := m.(msg.Reply)
	if !ok || c.Done() || r.Seq != uint64(c.next+1) {
		return
	}
	c.replies = append(c.replies, r)
	c.next++
	c.send(ctx)
}

func (c *amalgamClient) Timer(ctx node.Context, t node.Timer) {
	if r, ok := t.(amalgamRetry); ok && r.Seq == uint64(c.next+1) {
		c.send(ctx)
	}
}

func (c *amalgamClient) Done() bool           { return c.next >= len(c.script) }
func (c *amalgamClient) Replies() []msg.Reply { return c.replies }
func (c *amalgamClient) Clone() node.Node     { cp := *c; return &cp }
func (c *amalgamClient) Hash() uint64         { return c.id<<20 ^ uint64(c.next) }
