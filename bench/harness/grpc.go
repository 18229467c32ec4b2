package harness

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/runtime"
)

// The transports a run can use.
const (
	// TransportSim runs every system on the runtime's hosts over the
	// bandwidth-limited simulated links of simnet.go.
	TransportSim = "sim"
	// TransportGRPC is the production runtime: every system runs as a
	// local cluster (amalgam-server dev) of gRPC hosts on
	// loopback, and clients use the Go client library.
	TransportGRPC = "grpc"
)

// grpcCluster is one system running on the production runtime.
type grpcCluster struct {
	entry    string
	machines int
	stored   func() int64
	close    func()
}

// startGRPC starts the system's local cluster; a durable one keeps its
// stores in a temporary directory that close removes.
func startGRPC(system string, s RunSpec) (*grpcCluster, error) {
	o := runtime.LocalOptions{Layout: s.Layout, Durability: s.durability(), Addr: "127.0.0.1:0",
		PaxosTiming: benchTiming}
	cleanup := func() {}
	if o.Durability == "durable" {
		dir, err := os.MkdirTemp("", "amalgam-bench-")
		if err != nil {
			return nil, err
		}
		o.DataDir = dir
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	cl, err := startCluster(system, o)
	if err != nil {
		cleanup()
		return nil, err
	}
	stop := cl.close
	cl.close = func() { stop(); cleanup() }
	return cl, nil
}

func startCluster(system string, o runtime.LocalOptions) (*grpcCluster, error) {
	if system == Amalgam {
		lc, err := runtime.StartLocal(o)
		if err != nil {
			return nil, err
		}
		return &grpcCluster{entry: lc.EntryAddr, machines: len(lc.Machines), close: lc.Close, stored: func() int64 {
			var n int64
			for _, m := range lc.Machines {
				for _, st := range m.NodeStats(context.Background()) {
					n += st.BytesStored
				}
			}
			return n
		}}, nil
	}
	bl, err := runtime.StartBaselineLocal(system, o)
	if err != nil {
		return nil, err
	}
	return &grpcCluster{entry: bl.EntryAddr, machines: len(bl.Machines), close: bl.Close, stored: func() int64 {
		var n int64
		for _, m := range bl.Machines {
			n += m.StoredBytes(context.Background())
		}
		return n
	}}, nil
}

// runGRPC is Run on the production runtime: closed-loop clients, each a
// goroutine calling client.Txn.
func runGRPC(s RunSpec) (Point, error) {
	l := s.Layout
	cl, err := startGRPC(s.System, s)
	if err != nil {
		return Point{}, err
	}
	defer cl.close()
	seqRun := s.Workload.Keys == "seq"
	var phase atomic.Int32 // 0 warm-up, 1 measuring, 2 stopping
	var done atomic.Int32
	var seq atomic.Uint64
	recs := make([]*recorder, s.Clients)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	warm := s.Warmup
	if seqRun {
		warm = 0
		phase.Store(1) // every write counts, from the first
	}
	for i := range recs {
		rec := &recorder{}
		if seqRun {
			rec.blocks = map[uint64]bool{}
		}
		recs[i] = rec
		c, err := client.Dial(ctx, cl.entry, client.Options{AttemptTimeout: 10 * time.Second})
		if err != nil {
			return Point{}, err
		}
		defer c.Close()
		g := newGen(s.Workload, l.NumBlocks(), l.BlockSize, i, &seq)
		wg.Go(func() {
			defer done.Add(1)
			for phase.Load() < 2 {
				ops, ok := g.next()
				if !ok {
					return
				}
				t0 := time.Now()
				_, err := c.Txn(ctx, ops)
				if rec.blocks != nil && err == nil && ops[0].Kind != msg.OpRead {
					rec.blocks[ops[0].Block] = true // stored, whenever it finished
				}
				if phase.Load() != 1 {
					continue
				}
				rec.add(time.Since(t0))
				if err != nil {
					rec.errs++
				}
			}
		})
	}
	var disk0 runtime.DiskStats
	elapsed, cpu := measure(s, warm, &phase, recs, func() { disk0 = runtime.StoreDiskStats() },
		func() bool { return seqRun && int(done.Load()) == s.Clients })
	disk := runtime.StoreDiskStats()
	if !seqRun {
		cancel() // a storage run lets the writes in flight finish: they are stored
	}
	wg.Wait()
	if s.Progress != nil {
		s.Progress(1)
	}
	p := point(s, recs, elapsed, cpu)
	p.Machines, p.Transport = cl.machines, TransportGRPC
	if p.Ops > 0 && s.durability() == "durable" {
		p.SyncsPerOp = float64(disk.Syncs-disk0.Syncs) / float64(p.Ops)
		p.DiskPerLogical = float64(disk.BytesWritten-disk0.BytesWritten) / float64(p.Ops*int64(l.BlockSize))
	}
	if len(p.written) > 0 {
		time.Sleep(10 * benchHeartbeat) // followers catch up
		p.StoredPerLogical = float64(cl.stored()) / float64(int64(len(p.written))*int64(l.BlockSize))
	}
	return p.Point, nil
}

// minOpsGrace bounds how far RunSpec.MinOps extends a run.
const minOpsGrace = time.Minute

// measure waits out warm-up and the measured interval (or until finished
// holds), calling onStart and switching phase to 1 when measuring starts
// and to 2 at the end, and returns the measured time and the process CPU
// time spent in it. The interval goes on past s.Duration while recs hold
// fewer than s.MinOps operations, by at most minOpsGrace.
func measure(s RunSpec, warm time.Duration, phase *atomic.Int32, recs []*recorder, onStart func(), finished func() bool) (elapsed, cpu time.Duration) {
	total := warm + s.Duration
	enough := func() bool {
		var n int64
		for _, r := range recs {
			n += r.n.Load()
		}
		return n >= s.MinOps
	}
	t0 := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var cpu0 time.Duration
	var start time.Time
	measuring := false
	for {
		now := time.Now()
		if !measuring && now.Sub(t0) >= warm {
			measuring = true
			cpu0 = cpuTime()
			start = now
			onStart()
			phase.Store(1)
		}
		if now.Sub(t0) >= total && enough() || now.Sub(t0) >= total+minOpsGrace || finished() {
			break
		}
		if s.Progress != nil {
			s.Progress(min(1, float64(now.Sub(t0))/float64(total)))
		}
		<-tick.C
	}
	phase.Store(2)
	return time.Since(start), cpuTime() - cpu0
}

// measured is a Point with the blocks written, for the storage figure.
type measured struct {
	Point
	written map[uint64]bool
}

// point summarises the recorders of a run.
func point(s RunSpec, recs []*recorder, elapsed, cpu time.Duration) measured {
	l := s.Layout
	var all []time.Duration
	var errs int64
	written := map[uint64]bool{}
	for _, r := range recs {
		all = append(all, r.lat...)
		errs += r.errs
		for b := range r.blocks {
			written[b] = true
		}
	}
	slices.Sort(all)
	ops := int64(len(all))
	p := Point{
		Experiment: s.Experiment, System: s.System, Durability: s.durability(),
		Workload: s.Workload.String(), Keys: s.Workload.Keys, BlockSize: l.BlockSize,
		Groups: l.N, G: l.G, F: l.F, Clients: s.Clients,
		Seconds: elapsed.Seconds(), Ops: ops, Errors: errs,
	}
	if s.System != Amalgam {
		p.G = 0
	}
	if ops > 0 {
		p.OpsPerSec = float64(ops) / elapsed.Seconds()
		p.MBPerSec = p.OpsPerSec * float64(l.BlockSize) / 1e6
		pct := func(q float64) float64 {
			return float64(all[min(len(all)-1, int(q*float64(len(all))))]) / 1e6
		}
		p.P50ms, p.P99ms, p.P999ms = pct(0.50), pct(0.99), pct(0.999)
		p.CPUus = float64(cpu.Microseconds()) / float64(ops)
	}
	return measured{Point: p, written: written}
}

func (s RunSpec) durability() string { return durabilityOr(s.Durability) }
