package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amalgam-store/amalgam/bench/loadgen"
	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// RecoveryOptions configures amalgam-bench recovery: a durable Amalgam
// cluster of separate processes (a reconfiguration service, N machines
// and a spare) under closed-loop writes, one machine SIGKILLed.
type RecoveryOptions struct {
	N, G, F   int // default 6, 3, 2
	BlockSize int // default 4 KiB
	// MiBPerMachine is what each machine holds, data and parity blocks
	// (default 2); the number of stripes follows from it.
	MiBPerMachine float64
	Clients       int           // default 8
	KillAfter     time.Duration // into the load (default 10s)
	Duration      time.Duration // of the whole load (default 90s)
	Bucket        time.Duration // default 250ms
	SuspectAfter  time.Duration // the failure detector's (default 1500ms)
	// RebuildRate is passed to every node's --rebuild-rate ("" leaves
	// the server's default).
	RebuildRate string
	Victim      int // the machine killed
	Seed        uint64
	Src         string // the source tree amalgam-server is built from
	Progress    func(string)
}

func (o *RecoveryOptions) defaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.N, 6)
	def(&o.G, 3)
	def(&o.F, 2)
	def(&o.BlockSize, 4<<10)
	def(&o.Clients, 8)
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defD(&o.KillAfter, 10*time.Second)
	defD(&o.Duration, 90*time.Second)
	defD(&o.Bucket, 250*time.Millisecond)
	defD(&o.SuspectAfter, 1500*time.Millisecond)
	if o.MiBPerMachine == 0 {
		o.MiBPerMachine = 2
	}
	if o.Src == "" {
		o.Src = "."
	}
}

// Validate checks the options as given: unset (zero) fields are refused,
// as a command line's zeros are; Recovery fills them with defaults first.
func (o *RecoveryOptions) Validate() error {
	switch {
	case o.G < 1 || o.F < 1 || o.G+o.F > o.N:
		return fmt.Errorf("need --g >= 1, --f >= 1 and --g + --f <= --n, got n=%d g=%d f=%d", o.N, o.G, o.F)
	case o.BlockSize < 8:
		return fmt.Errorf("--block-size must be at least 8 bytes, got %d", o.BlockSize)
	case o.MiBPerMachine <= 0:
		return fmt.Errorf("--mib-per-machine must be positive, got %g", o.MiBPerMachine)
	case o.Clients < 1:
		return fmt.Errorf("--clients must be at least 1, got %d", o.Clients)
	case o.KillAfter < 0 || o.SuspectAfter < 0:
		return fmt.Errorf("--kill-after and --suspect-after must not be negative")
	case o.Bucket <= 0:
		return fmt.Errorf("--bucket must be positive, got %v", o.Bucket)
	case o.KillAfter >= o.Duration:
		return fmt.Errorf("--kill-after (%v) must be before the end of the load (--duration %v)", o.KillAfter, o.Duration)
	case o.Victim < 0 || o.Victim >= o.N:
		return fmt.Errorf("--victim must be a machine 0..%d, got %d", o.N-1, o.Victim)
	}
	return nil
}

// layout is the cluster's: enough stripes for MiBPerMachine per machine.
func (o *RecoveryOptions) layout() erasure.Layout {
	l := erasure.Layout{N: o.N, G: o.G, F: o.F, BlockSize: o.BlockSize}
	per := int64(o.MiBPerMachine * (1 << 20))
	stripe := int64((o.G + o.F) * o.BlockSize)
	l.Stripes = int((per*int64(o.N) + stripe - 1) / stripe)
	return l
}

// Recovery runs the benchmark.
func Recovery(o RecoveryOptions) (*RecoveryReport, error) {
	o.defaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	src, err := FindSource(o.Src)
	if err != nil {
		return nil, err
	}
	progress := func(f string, a ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(f, a...))
		}
	}
	ctx, tmp, release, err := scratch("amalgam-recovery-")
	if err != nil {
		return nil, err
	}
	defer release()
	server := filepath.Join(tmp, "amalgam-server")
	if err := goBuild(ctx, src, server, "./cmd/amalgam-server", o.Progress); err != nil {
		return nil, err
	}
	l := o.layout()
	rep := &RecoveryReport{Host: newHost(), System: Amalgam, Durability: "durable",
		N: l.N, G: l.G, F: l.F, Stripes: l.Stripes, Blocks: l.NumBlocks(), BlockSize: l.BlockSize,
		HeldBytes: int64(l.Stripes*(l.G+l.F)/l.N) * int64(l.BlockSize), Clients: o.Clients, Victim: o.Victim,
		RebuildRate: o.RebuildRate, SuspectAfter: o.SuspectAfter, Bucket: o.Bucket, Duration: o.Duration}
	progress("starting a reconfiguration service, %d machines and a spare: %d stripes of %s blocks, %.1f MiB per machine",
		l.N, l.Stripes, sizeLabel(l.BlockSize), float64(rep.HeldBytes)/(1<<20))
	cl, err := startRecoveryCluster(server, filepath.Join(tmp, "cluster"), l, o)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	admin, err := client.Dial(ctx, cl.entry, client.Options{AttemptTimeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if err := waitHealthy(ctx, admin, 0, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("cluster not healthy at first: %w", err)
	}
	clients := make([]*client.Client, o.Clients)
	for i := range clients {
		if clients[i], err = client.Dial(ctx, cl.entry, client.Options{}); err != nil {
			return nil, err
		}
		defer clients[i].Close()
	}
	progress("filling %d blocks", l.NumBlocks())
	t := time.Now()
	if err := fillBlocks(ctx, clients, l); err != nil {
		return nil, fmt.Errorf("fill: %w", err)
	}
	rep.FillSeconds = time.Since(t).Seconds()
	rep.FillMBPerSec = float64(l.NumBlocks()) * float64(l.BlockSize) / 1e6 / rep.FillSeconds
	progress("filled in %.1f s (%.2f MB/s); loading for %v, killing machine %d at %v", rep.FillSeconds, rep.FillMBPerSec, o.Duration, o.Victim, o.KillAfter)

	tl := &timeline{t0: time.Now()}
	var firstErr error
	var errOnce sync.Once
	doers := make([]loadgen.Doer, len(clients))
	for i, c := range clients {
		doers[i] = timedDoer{d: loadgen.TxnDoer{C: c}, tl: tl, total: o.Duration, fail: func(err error) { errOnce.Do(func() { firstErr = err }) }}
	}
	spec := loadgen.Spec{Workload: loadgen.Write, BlockSize: l.BlockSize, Blocks: l.NumBlocks(), Clients: o.Clients, Duration: o.Duration, Seed: o.Seed}
	loadDone := make(chan struct{})
	go func() { loadgen.Run(ctx, spec, doers, nil); close(loadDone) }()
	events := watchRecovery(ctx, admin, cl, o, tl.t0, loadDone, progress)
	<-loadDone
	rep.Events = events
	rep.LoadAfter = loadAvg()
	if firstErr != nil {
		rep.FirstError = firstErr.Error()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.finish(tl.snapshot())
	return rep, nil
}

// timedDoer records every operation that completes within total.
type timedDoer struct {
	d     loadgen.Doer
	tl    *timeline
	total time.Duration
	fail  func(error)
}

func (t timedDoer) Do(ctx context.Context, op msg.Op) (int, error) {
	start := time.Now()
	n, err := t.d.Do(ctx, op)
	if time.Since(t.tl.t0) < t.total {
		t.tl.add(start, err)
		if err != nil {
			t.fail(err)
		}
	}
	return n, err
}

// recoveryCluster is the cluster's processes and addresses.
type recoveryCluster struct {
	*procCluster
	entry    string
	machines []string
	spare    string
	victim   started
}

// startRecoveryCluster starts amalgam-server reconfig, node per machine
// and a spare node, each a process, durable.
func startRecoveryCluster(server, dir string, l erasure.Layout, o RecoveryOptions) (*recoveryCluster, error) {
	ports, err := freePorts(l.N + 2)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	cl := &recoveryCluster{procCluster: &procCluster{}, entry: addr(0), spare: addr(l.N + 1)}
	for m := range l.N {
		cl.machines = append(cl.machines, addr(1+m))
	}
	st, err := startProc(vsBinaries{}, dir, "reconfig", "reconfiguration service", server, "reconfig", "--id", "1", "--addr", cl.entry,
		"--data-dir", filepath.Join(dir, "reconfig"), "--machine-addrs", strings.Join(cl.machines, ","),
		"--g", strconv.Itoa(l.G), "--f", strconv.Itoa(l.F), "--w", "0", "--block-size", strconv.Itoa(l.BlockSize),
		"--blocks", strconv.FormatUint(l.NumBlocks(), 10), "--suspect-after", o.SuspectAfter.String())
	if err != nil {
		return nil, err
	}
	cl.add(st)
	node := func(name, ready string, args ...string) (started, error) {
		args = append([]string{"node", "--reconfig", cl.entry, "--durability", "durable", "--data-dir", filepath.Join(dir, name)}, args...)
		if o.RebuildRate != "" {
			args = append(args, "--rebuild-rate", o.RebuildRate)
		}
		return startProc(vsBinaries{}, dir, name, ready, server, args...)
	}
	for m, a := range cl.machines {
		st, err := node(fmt.Sprintf("node-%d", m), "serving at", "--machine", strconv.Itoa(m), "--addr", a)
		if err != nil {
			cl.stop()
			return nil, err
		}
		cl.add(st)
		if m == o.Victim {
			cl.victim = st
		}
	}
	if st, err = node("spare", "spare serving at", "--spare", "--addr", cl.spare); err != nil {
		cl.stop()
		return nil, err
	}
	cl.add(st)
	return cl, nil
}

// fillBlocks writes every block once, the clients sharing the blocks.
func fillBlocks(ctx context.Context, clients []*client.Client, l erasure.Layout) error {
	data := make([]byte, l.BlockSize)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			for b := uint64(i); b < l.NumBlocks() && errs[i] == nil; b += uint64(len(clients)) {
				errs[i] = c.Write(ctx, b, 0, data)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
