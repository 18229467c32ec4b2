package harness

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Point is one measured run of one system.
type Point struct {
	Experiment string `json:"experiment"`
	System     string `json:"system"`
	// X is the value of the experiment's parameter for this point and
	// Series the curve it belongs to (e.g. "128KiB").
	X          float64 `json:"x"`
	Series     string  `json:"series"`
	Durability string  `json:"durability"`
	Transport  string  `json:"transport"` // sim or grpc
	Workload   string  `json:"workload"`
	Keys       string  `json:"keys"`
	BlockSize  int     `json:"block_size"`
	Groups     int     `json:"groups"`   // shards: data servers or Paxos groups
	Machines   int     `json:"machines"` // server machines simulated
	G          int     `json:"g"`        // Amalgam: data blocks per stripe
	F          int     `json:"f"`
	Clients    int     `json:"clients"`
	Seconds    float64 `json:"seconds"` // measured interval
	Ops        int64   `json:"ops"`
	Errors     int64   `json:"errors"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"` // logical bytes of the blocks operated on, 10^6 B/s
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	P999ms     float64 `json:"p999_ms"`
	// CPU time of the whole process (servers, clients, network) per
	// operation during the measured interval, from getrusage.
	CPUus float64 `json:"cpu_us_per_op"`
	// Durable runs: fsync and fdatasync calls of every store, and bytes
	// the stores wrote to files per logical byte (ops x block size),
	// during the measured interval.
	SyncsPerOp     float64 `json:"syncs_per_op,omitempty"`
	DiskPerLogical float64 `json:"disk_bytes_per_logical_byte,omitempty"`
	// Bytes sent between machines per operation.
	NetBytesPerOp float64 `json:"net_bytes_per_op"`
	// Bytes the servers store per logical byte written (distinct blocks
	// written x block size); 0 if nothing was written.
	StoredPerLogical float64 `json:"stored_per_logical_byte,omitempty"`
	Bandwidth        float64 `json:"link_bytes_per_sec"`
	// Unordered messages dropped by full links (see MaxBacklog).
	Dropped int64 `json:"dropped_messages"`
}

// RunSpec is one run of one system.
type RunSpec struct {
	Experiment string
	System     string
	Layout     erasure.Layout
	Workload   Workload
	Clients    int
	Warmup     time.Duration
	Duration   time.Duration // for Keys == "seq": an upper bound
	// MinOps, if set, extends the measured interval past Duration until
	// that many operations completed (by at most minOpsGrace), so that a
	// busy machine makes a run longer rather than empty.
	MinOps int64
	Net    NetOptions
	// Transport is TransportSim (default) or TransportGRPC.
	Transport string
	// Durability is "memory" (default) or, with TransportGRPC, "durable".
	Durability string
	// Progress, if set, is called about every 100 ms with the fraction of
	// the run done.
	Progress func(done float64)
}

// recorder collects one client's completions.
type recorder struct {
	lat    []time.Duration
	n      atomic.Int64 // len(lat), readable while the client runs
	errs   int64
	blocks map[uint64]bool // distinct blocks written (storage runs)
}

// driver wraps a system's protocol client: it feeds it transactions a
// batch at a time, timing each one, and swaps in a fresh client (a new
// client id, so the servers' client tables stay small) when a batch is
// done.
type driver struct {
	idx     int
	dep     *deployment
	gen     *gen
	inner   clientNode
	batches int
	seen    int
	started time.Time
	phase   *atomic.Int32 // 0 warm-up, 1 measuring, 2 stopping
	rec     *recorder
	script  [][]msg.Op
	done    *atomic.Int32 // drivers finished ("seq" runs)
	batch   int
}

func (d *driver) fresh(ctx node.Context) {
	d.batches++
	var script [][]msg.Op
	for len(script) < d.batch {
		ops, ok := d.gen.next()
		if !ok {
			break
		}
		script = append(script, ops)
	}
	if len(script) == 0 {
		d.inner = nil
		d.done.Add(1)
		return
	}
	d.script = script
	d.inner = d.dep.newClient(uint64(d.idx+1)<<24|uint64(d.batches), script)
	d.seen = 0
	d.started = time.Now()
	d.inner.Init(ctx)
	d.check(ctx)
}

func (d *driver) Init(ctx node.Context) { d.fresh(ctx) }

func (d *driver) Handle(ctx node.Context, from node.Addr, m node.Message) {
	if d.inner != nil {
		d.inner.Handle(ctx, from, m)
		d.check(ctx)
	}
}

func (d *driver) Timer(ctx node.Context, t node.Timer) {
	if d.inner != nil {
		d.inner.Timer(ctx, t)
		d.check(ctx)
	}
}

func (d *driver) check(ctx node.Context) {
	rs := d.inner.Replies()
	if len(rs) == d.seen {
		return
	}
	now := time.Now()
	if d.phase.Load() == 1 {
		for _, r := range rs[d.seen:] {
			d.rec.add(now.Sub(d.started))
			if r.Err != "" {
				d.rec.errs++
			}
		}
		if d.rec.blocks != nil {
			for _, ops := range d.script[d.seen:len(rs)] {
				if ops[0].Kind != msg.OpRead {
					d.rec.blocks[ops[0].Block] = true
				}
			}
		}
	}
	d.seen = len(rs)
	d.started = now
	if d.inner.Done() {
		d.fresh(ctx)
	}
}

func (d *driver) Clone() node.Node { panic("harness: drivers are not cloned") }
func (d *driver) Hash() uint64     { return uint64(d.idx) }

// Run measures one system on one workload.
func Run(s RunSpec) (Point, error) {
	if s.Clients < 1 {
		return Point{}, fmt.Errorf("need at least one client, got %d", s.Clients)
	}
	switch s.durability() {
	case "memory":
	case "durable":
		if s.Transport != TransportGRPC {
			return Point{}, fmt.Errorf("durability durable needs transport %s (the simulated links keep no stores)", TransportGRPC)
		}
	default:
		return Point{}, fmt.Errorf("unknown durability %q (want memory or durable)", s.Durability)
	}
	switch s.Transport {
	case TransportGRPC:
		return runGRPC(s)
	case "", TransportSim:
	default:
		return Point{}, fmt.Errorf("unknown transport %q (want %s or %s)", s.Transport, TransportSim, TransportGRPC)
	}
	l := s.Layout
	dep, err := deploy(s.System, l, s.Net)
	if err != nil {
		return Point{}, err
	}
	seqRun := s.Workload.Keys == "seq"
	// A batch holds at most ~4 MiB of replies (reads return blocks).
	batch := max(4, min(512, (4<<20)/max(1, l.BlockSize)))
	if seqRun {
		batch = 1 // clients share the blocks to write
	}
	var phase, done atomic.Int32
	var seq atomic.Uint64
	recs := make([]*recorder, s.Clients)
	for i := range recs {
		recs[i] = &recorder{}
		if seqRun {
			recs[i].blocks = map[uint64]bool{}
		}
		dr := &driver{idx: i, dep: dep, gen: newGen(s.Workload, l.NumBlocks(), l.BlockSize, i, &seq),
			phase: &phase, rec: recs[i], done: &done, batch: batch}
		dep.net.Add(msg.ClientAddr(i), -1, dr)
	}
	warm := s.Warmup
	if seqRun {
		warm = 0
		phase.Store(1)
	}
	defer dep.net.Stop()
	if err := dep.net.Start(); err != nil {
		return Point{}, err
	}
	var net0 int64
	elapsed, cpu := measure(s, warm, &phase, recs, func() { net0 = dep.net.BytesBetweenMachines() },
		func() bool { return seqRun && int(done.Load()) == s.Clients })
	net1 := dep.net.BytesBetweenMachines()
	if seqRun {
		// Let followers catch up (heartbeats, learning) before counting
		// what the servers store.
		time.Sleep(10 * benchHeartbeat)
	}
	dep.net.Stop()
	if s.Progress != nil {
		s.Progress(1)
	}
	p := point(s, recs, elapsed, cpu)
	p.Machines, p.Bandwidth, p.Dropped, p.Transport = dep.machines, s.Net.Bandwidth, dep.net.Dropped(), TransportSim
	if p.Ops > 0 {
		p.NetBytesPerOp = float64(net1-net0) / float64(p.Ops)
	}
	if len(p.written) > 0 {
		p.StoredPerLogical = float64(dep.stored()) / float64(int64(len(p.written))*int64(s.Layout.BlockSize))
	}
	return p.Point, nil
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	u, s, ok := rusage()
	if !ok {
		return 0
	}
	return u + s
}

// Cores is the number of CPUs the process may use.
func Cores() int { return runtime.GOMAXPROCS(0) }

// add records one completed operation's latency.
func (r *recorder) add(d time.Duration) {
	r.lat = append(r.lat, d)
	r.n.Add(1)
}
