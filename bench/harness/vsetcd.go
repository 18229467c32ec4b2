package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	ossignal "os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/bench/loadgen"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/runtime"
)

// VsEtcdOptions configures amalgam-bench vs-etcd: Amalgam (amalgam-server
// dev, durable, n=5 g=3 f=2) against stock etcd clusters, each a set of
// server processes, and optionally durable ShardedPaxos and RSPaxos
// (amalgam-server dev --protocol P), alternated round by round.
type VsEtcdOptions struct {
	Rounds   int           // default 3
	Warmup   time.Duration // default 15s: past a fresh store's first seconds
	Duration time.Duration // default 5s
	Seed     uint64
	Members  []int // etcd cluster sizes, default 3 and 5 (when Systems is empty)
	// Systems, if not empty, are the systems to run, in this order within
	// a round: "amalgam", "shardedpaxos", "rspaxos" and "etcd<N>" (N
	// members). Empty: amalgam, then etcd<N> for every N in Members.
	// RSPaxos skips the add workloads (loadgen.Unsupported).
	Systems []string
	// Workloads, if not empty, limits the run to these names (VsWorkload.Name).
	Workloads []string
	// Src is the Amalgam source tree (the main module's root); the
	// harness builds amalgam-server and amalgam-etcd from it.
	Src string
	// MinOps extends every measured interval until that many operations
	// completed (loadgen.Spec.MinOps).
	MinOps int64
	// NoPerf turns off counting sync system calls with perf stat (by
	// default on when perf can count them).
	NoPerf bool
	// Progress, if set, is told what runs.
	Progress func(string)
}

// VsWorkload is one workload of the comparison.
type VsWorkload struct {
	Workload  string `json:"workload"` // loadgen.Write or loadgen.Add
	BlockSize int    `json:"block_size"`
	Clients   int    `json:"clients"`
}

// Name is e.g. "write-4KiB-32".
func (w VsWorkload) Name() string {
	return fmt.Sprintf("%s-%s-%d", w.Workload, sizeLabel(w.BlockSize), w.Clients)
}

// VsWorkloads are the workloads vs-etcd runs, in order.
var VsWorkloads = []VsWorkload{
	{loadgen.Write, 4 << 10, 1}, {loadgen.Write, 4 << 10, 32},
	{loadgen.Add, 4 << 10, 1}, {loadgen.Add, 4 << 10, 32},
	{loadgen.Write, 128 << 10, 1}, {loadgen.Write, 128 << 10, 32},
}

// vsBlocks is the key range: block ids 0..vsBlocks-1 (Amalgam's dev
// default of 1024 blocks).
const vsBlocks = 1024

// The layout every amalgam-server dev cluster of vs-etcd runs: n=5 (or 5
// Paxos groups), g=3, f=2.
const vsMachines, vsG, vsF = 5, 3, 2

// VsPoint is one system's measurement of one workload in one round.
type VsPoint struct {
	Round    int    `json:"round"`
	System   string `json:"system"` // "amalgam", "shardedpaxos", "rspaxos", "etcd3", "etcd5"
	Workload string `json:"workload"`
	VsWorkload
	loadgen.Result
	// Server processes (all of them, summed) during the measured interval.
	Processes  int     `json:"server_processes"`
	CPUusPerOp float64 `json:"server_cpu_us_per_op"`
	// LoadCPUusPerOp is the load generator's CPU per operation (its
	// client library included), on the same cores as the servers.
	LoadCPUusPerOp float64 `json:"load_cpu_us_per_op"`
	// SyncCallsPerOp counts fsync and fdatasync system calls of the
	// server processes (perf stat; nil without perf).
	SyncCallsPerOp *float64 `json:"sync_syscalls_per_op"`
	// MetricSyncsPerOp is what the system's own metrics count as syncs
	// (etcd: WAL fsyncs + backend commits); nil where it exports none
	// (Amalgam, ShardedPaxos).
	MetricSyncsPerOp *float64 `json:"metric_syncs_per_op"`
	// DiskPerLogical is /proc/<pid>/io write_bytes of the servers over
	// ops x block size.
	DiskPerLogical float64 `json:"disk_bytes_per_logical_byte"`
	// DevicePerLogical is the bytes the data directory's block device
	// took over ops x block size (vsdevice.go; nil where it cannot be
	// read).
	DevicePerLogical *float64 `json:"device_bytes_per_logical_byte"`
}

// VsSummary is one system on one workload over the rounds: medians, and
// for the ratios also min and max, of per-round values.
type VsSummary struct {
	Workload         string    `json:"workload"`
	System           string    `json:"system"`
	OpsPerSec        Spread    `json:"ops_per_sec"`
	MBPerSec         Spread    `json:"mb_per_sec"`
	P50ms            Spread    `json:"p50_ms"`
	P99ms            Spread    `json:"p99_ms"`
	CPUusPerOp       Spread    `json:"server_cpu_us_per_op"`
	LoadCPUusPerOp   Spread    `json:"load_cpu_us_per_op"`
	SyncCallsPerOp   *Spread   `json:"sync_syscalls_per_op"`
	MetricSyncsPerOp *Spread   `json:"metric_syncs_per_op"`
	DiskPerLogical   Spread    `json:"disk_bytes_per_logical_byte"`
	DevicePerLogical *Spread   `json:"device_bytes_per_logical_byte"`
	Retries          int64     `json:"retries"`
	Errors           int64     `json:"errors"`
	RatioRounds      []float64 `json:"amalgam_ratio_per_round,omitempty"`
	// Ratio is Amalgam's ops/s over this system's, per round (empty
	// for Amalgam itself).
	Ratio *Spread `json:"amalgam_ratio,omitempty"`
	// SPRatio is ShardedPaxos's ops/s over this etcd cluster's, per round
	// (empty unless both ran).
	SPRatioRounds []float64 `json:"shardedpaxos_ratio_per_round,omitempty"`
	SPRatio       *Spread   `json:"shardedpaxos_ratio,omitempty"`
	// RSRatio is RSPaxos's ops/s over this etcd cluster's, per round
	// (empty unless both ran).
	RSRatioRounds []float64 `json:"rspaxos_ratio_per_round,omitempty"`
	RSRatio       *Spread   `json:"rspaxos_ratio,omitempty"`
}

// VsSkip is a workload a system did not run, and why.
type VsSkip struct {
	System   string `json:"system"`
	Workload string `json:"workload"`
	Reason   string `json:"reason"`
}

// Spread is a median with the minimum and maximum.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Host is when and on what a run of separate processes ran: the load
// average before and after it.
type Host struct {
	Started    time.Time `json:"started"`
	Cores      int       `json:"cores"`
	LoadBefore string    `json:"loadavg_before"`
	LoadAfter  string    `json:"loadavg_after"`
}

func newHost() Host {
	return Host{Started: time.Now().UTC(), Cores: Cores(), LoadBefore: loadAvg()}
}

// VsReport is the result of vs-etcd.
type VsReport struct {
	Host
	Rounds   int           `json:"rounds"`
	Warmup   time.Duration `json:"warmup_ns"`
	Duration time.Duration `json:"duration_ns"`
	Systems  []string      `json:"systems"`
	Points   []VsPoint     `json:"points"`
	Summary  []VsSummary   `json:"summary"`
	Skipped  []VsSkip      `json:"skipped,omitempty"`
}

// vsWarmup is the default warm-up before every measured run. Freshly
// started servers are slower for their first seconds
// (Amalgam's 128 KiB writes took 994, 1,414 and then about 1,560 ops/s in
// consecutive 2 s windows after start), while pebble's memtable arenas
// are faulted in and its first WAL files written. 15 s is past that, so
// the runs measure the servers as they run for long.
const vsWarmup = 15 * time.Second

func (o *VsEtcdOptions) defaults() {
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Warmup <= 0 {
		o.Warmup = vsWarmup
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if len(o.Members) == 0 {
		o.Members = []int{3, 5}
	}
	if len(o.Systems) == 0 {
		o.Systems = []string{Amalgam}
		for _, m := range o.Members {
			o.Systems = append(o.Systems, fmt.Sprintf("etcd%d", m))
		}
	}
	if o.Src == "" {
		o.Src = "."
	}
}

// FindSource walks up from dir to the main module's root.
func FindSource(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/amalgam-store/amalgam\n")) {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("no Amalgam source tree (go.mod of github.com/amalgam-store/amalgam) at or above %s: run from the repository or pass --src", dir)
		}
		d = up
	}
}

// VsEtcd runs the comparison.
func VsEtcd(o VsEtcdOptions) (*VsReport, error) {
	o.defaults()
	src, err := FindSource(o.Src)
	if err != nil {
		return nil, err
	}
	var wls []VsWorkload
	for _, w := range VsWorkloads {
		if len(o.Workloads) == 0 || slices.Contains(o.Workloads, w.Name()) {
			wls = append(wls, w)
		}
	}
	if len(wls) == 0 {
		return nil, fmt.Errorf("no workload matches %v (known: %s)", o.Workloads, strings.Join(vsWorkloadNames(), ", "))
	}
	skipped, err := vsPlan(o.Systems, wls)
	if err != nil {
		return nil, err
	}
	ctx, tmp, release, err := scratch("amalgam-vs-etcd-")
	if err != nil {
		return nil, err
	}
	defer release()
	bins, err := buildVsBinaries(ctx, src, tmp, o.Progress)
	if err != nil {
		return nil, err
	}
	bins.perf = !o.NoPerf && perfWorks()
	if !bins.perf && o.Progress != nil {
		o.Progress("perf stat cannot count sync system calls here: that column stays empty")
	}
	rep := &VsReport{Host: newHost(), Rounds: o.Rounds,
		Warmup: o.Warmup, Duration: o.Duration, Systems: o.Systems, Skipped: skipped}
	sizes := []int{}
	for _, w := range wls {
		if !slices.Contains(sizes, w.BlockSize) {
			sizes = append(sizes, w.BlockSize)
		}
	}
	for r := 1; r <= o.Rounds; r++ {
		for _, bs := range sizes {
			for _, sys := range rep.Systems {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if !slices.ContainsFunc(wls, func(w VsWorkload) bool { return w.BlockSize == bs && vsRuns(sys, w) }) {
					continue
				}
				dir := filepath.Join(tmp, fmt.Sprintf("r%d-%s-%d", r, sys, bs))
				members, _ := vsSystem(sys)
				var cl *procCluster
				switch {
				case members > 0:
					cl, err = startEtcd(bins, dir, members)
				default:
					cl, err = startDev(bins, dir, sys, bs)
				}
				if err != nil {
					return nil, fmt.Errorf("round %d: starting %s: %w", r, sys, err)
				}
				for _, w := range wls {
					if w.BlockSize != bs || !vsRuns(sys, w) {
						continue
					}
					if o.Progress != nil {
						o.Progress(fmt.Sprintf("round %d/%d %s %s", r, o.Rounds, sys, w.Name()))
					}
					p, err := runVsLoad(ctx, bins, cl, w, o)
					if err != nil {
						cl.stop()
						return nil, fmt.Errorf("round %d: %s %s: %w", r, sys, w.Name(), err)
					}
					p.Round, p.System = r, sys
					rep.Points = append(rep.Points, p)
				}
				cl.stop()
				_ = os.RemoveAll(dir)
			}
		}
	}
	rep.LoadAfter = loadAvg()
	rep.summarise(wls)
	return rep, nil
}

// vsSystem checks a system's name: amalgam, shardedpaxos, rspaxos or
// etcd<N>; for etcd it returns N.
func vsSystem(sys string) (etcdMembers int, err error) {
	switch sys {
	case Amalgam, ShardedPaxos, RSPaxos:
		return 0, nil
	}
	if n, ok := strings.CutPrefix(sys, "etcd"); ok {
		if m, err := strconv.Atoi(n); err == nil && m >= 1 {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown system %q (want %s, %s, %s or etcd<N>, N members)", sys, Amalgam, ShardedPaxos, RSPaxos)
}

// vsLoadSystem is amalgam-etcd load's --system for sys.
func vsLoadSystem(sys string) string {
	if m, _ := vsSystem(sys); m > 0 {
		return "etcd"
	}
	return sys
}

// vsRuns reports whether sys runs w (loadgen.Unsupported).
func vsRuns(sys string, w VsWorkload) bool {
	return loadgen.Unsupported(vsLoadSystem(sys), w.Workload) == ""
}

// vsPlan checks the systems (known, each once) and returns the workloads
// of wls each skips. A system left with none of them is an error: the
// run would measure nothing of it.
func vsPlan(systems []string, wls []VsWorkload) ([]VsSkip, error) {
	var skipped []VsSkip
	for i, sys := range systems {
		if _, err := vsSystem(sys); err != nil {
			return nil, err
		}
		if slices.Index(systems, sys) != i {
			return nil, fmt.Errorf("system %s listed twice", sys)
		}
		var why string
		n := 0
		for _, w := range wls {
			if why = loadgen.Unsupported(vsLoadSystem(sys), w.Workload); why != "" {
				skipped = append(skipped, VsSkip{System: sys, Workload: w.Name(), Reason: why})
				n++
			}
		}
		if n == len(wls) && why != "" {
			return nil, errors.New(why)
		}
	}
	return skipped, nil
}

func vsWorkloadNames() []string {
	var out []string
	for _, w := range VsWorkloads {
		out = append(out, w.Name())
	}
	return out
}

// vsBinaries are the programs vs-etcd runs.
type vsBinaries struct {
	server, etcd string
	perf         bool // run servers under perf stat
}

// buildVsBinaries builds amalgam-server (main module) and amalgam-etcd
// (the nested module bench/etcd) into dir.
func buildVsBinaries(ctx context.Context, src, dir string, progress func(string)) (vsBinaries, error) {
	b := vsBinaries{server: filepath.Join(dir, "amalgam-server"), etcd: filepath.Join(dir, "amalgam-etcd")}
	for _, step := range []struct{ dir, out, pkg string }{
		{src, b.server, "./cmd/amalgam-server"},
		{filepath.Join(src, "bench", "etcd"), b.etcd, "."},
	} {
		if err := goBuild(ctx, step.dir, step.out, step.pkg, progress); err != nil {
			return b, err
		}
	}
	return b, nil
}

// scratch starts a run of server processes: a context that SIGINT or
// SIGTERM cancels, stopping the run and every process started with it, and
// a new temporary directory (named from prefix) for its binaries and data.
// release removes the directory and stops the signal handling.
func scratch(prefix string) (ctx context.Context, dir string, release func(), err error) {
	ctx, stop := ossignal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	return ctx, dir, func() {
		os.RemoveAll(dir)
		stop()
	}, nil
}

// goBuild runs go build -o out pkg in dir.
func goBuild(ctx context.Context, dir, out, pkg string, progress func(string)) error {
	if progress != nil {
		progress("building " + out)
	}
	c := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	c.Dir = dir
	if msg, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %v\n%s", pkg, dir, err, msg)
	}
	return nil
}

// procCluster is a cluster of server processes.
type procCluster struct {
	procs    []*exec.Cmd // what was started: the servers, or perf running them
	pids     []int       // the servers
	perf     []string    // perf stat output files
	entry    string      // load --endpoints
	system   string      // load --system
	fsyncs   func() (float64, bool)
	device   string // the data directory's device's stat file (vsdevice.go), or ""
	logFiles []*os.File
}

func (c *procCluster) add(s started) {
	c.procs, c.pids, c.logFiles = append(c.procs, s.cmd), append(c.pids, s.pid), append(c.logFiles, s.log)
	if s.perf != "" {
		c.perf = append(c.perf, s.perf)
	}
}

func (c *procCluster) stop() {
	for _, pid := range c.pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for _, p := range c.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	for _, f := range c.logFiles {
		_ = f.Close()
	}
}

// counters reads the servers' CPU time, bytes written to disk and syncs.
type counters struct {
	cpu          time.Duration
	diskBytes    int64
	syncCalls    float64
	hasSyncCalls bool
	metricSyncs  float64
	hasMetric    bool
	device       int64 // bytes the device took
	hasDevice    bool
}

func (c *procCluster) read() (counters, error) {
	var out counters
	for _, pid := range c.pids {
		cpu, err := procCPU(pid)
		if err != nil {
			return out, err
		}
		wb, err := procWriteBytes(pid)
		if err != nil {
			return out, err
		}
		out.cpu += cpu
		out.diskBytes += wb
	}
	if c.fsyncs != nil {
		out.metricSyncs, out.hasMetric = c.fsyncs()
	}
	if c.device != "" {
		n, err := deviceWritten(c.device)
		if err != nil {
			return out, err
		}
		out.device, out.hasDevice = n, true
	}
	if len(c.perf) > 0 {
		out.hasSyncCalls = true
		for _, f := range c.perf {
			n, err := perfCount(f)
			if err != nil {
				return out, err
			}
			out.syncCalls += n
		}
	}
	return out, nil
}

// started is one server process startProc started.
type started struct {
	cmd  *exec.Cmd // the server, or perf stat running it
	pid  int       // the server
	perf string    // perf stat's output, if it runs under perf
	log  *os.File
}

// startProc starts one server process (under perf stat if b.perf) and
// waits until a line of its stdout contains ready; its stderr goes to
// dir/name.log.
func startProc(b vsBinaries, dir, name, ready string, prog string, args ...string) (started, error) {
	var st started
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return st, err
	}
	c := exec.Command(prog, args...)
	if b.perf {
		st.perf = filepath.Join(dir, name+".perf")
		c = exec.Command("perf", append([]string{"stat", "-I", strconv.Itoa(perfIntervalMS), "-x", ",", "-o", st.perf,
			"-e", strings.Join(perfSyncEvents, ","), "--", prog}, args...)...)
	}
	c.Stderr = logf
	out, err := c.StdoutPipe()
	if err != nil {
		_ = logf.Close()
		return st, err
	}
	if err := c.Start(); err != nil {
		_ = logf.Close()
		return st, err
	}
	found := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := false
		for sc.Scan() {
			if !ok && strings.Contains(sc.Text(), ready) {
				ok = true
				found <- true
			}
		}
		if !ok {
			found <- false
		}
	}()
	ok := false
	select {
	case ok = <-found:
	case <-time.After(2 * time.Minute):
	}
	st.cmd, st.pid, st.log = c, c.Process.Pid, logf
	if ok && b.perf {
		st.pid, err = onlyChild(c.Process.Pid)
		ok = err == nil
	}
	if ok {
		return st, nil
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	_ = logf.Close()
	msg, _ := os.ReadFile(filepath.Join(dir, name+".log"))
	return st, fmt.Errorf("%s did not get ready: %v %s", name, err, lastLines(string(msg), 5))
}

// perfSyncEvents are the system calls counted as syncs.
var perfSyncEvents = []string{"syscalls:sys_enter_fsync", "syscalls:sys_enter_fdatasync"}

// perfIntervalMS is how often perf stat writes its counts: a reading
// at a mark misses at most this much of the interval.
const perfIntervalMS = 50

// perfWorks reports whether perf stat can count sync system calls of a
// program it runs.
func perfWorks() bool {
	return exec.Command("perf", "stat", "-x", ",", "-o", os.DevNull, "-e", strings.Join(perfSyncEvents, ","), "--", "true").Run() == nil
}

// perfCount sums the counts perf stat -I has written to file so far.
func perfCount(file string) (float64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 4 || !slices.Contains(perfSyncEvents, f[3]) {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil { // "<not counted>": nothing yet
			sum += v
		}
	}
	return sum, nil
}

// onlyChild is the one child process of pid (perf's: the server).
func onlyChild(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		return 0, fmt.Errorf("process %d has children %q, want one", pid, f)
	}
	return strconv.Atoi(f[0])
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], "\n")
}

// startDev starts amalgam-server dev, durable (pebble, synced before
// replying), n=5 g=3 f=2, in one process: for amalgam the configuration
// endpoint and 5 machines (a data and a parity server each); for
// shardedpaxos (--protocol) the entry address and 5 machines hosting 5
// Paxos groups of 3 full replicas and 2 witnesses; for rspaxos the entry
// address and 7 machines hosting 5 groups of 7 members (3 data and 4
// parity pieces of each block).
func startDev(b vsBinaries, dir, system string, blockSize int) (*procCluster, error) {
	ports, err := devPorts(system, blockSize)
	if err != nil {
		return nil, err
	}
	base, err := freePortRange(ports)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", base)
	args := []string{"dev", "--protocol", system,
		"--data-dir", filepath.Join(dir, "data"), "--addr", addr, "--machines", strconv.Itoa(vsMachines), "--g", strconv.Itoa(vsG), "--f", strconv.Itoa(vsF),
		"--block-size", strconv.Itoa(blockSize), "--blocks", strconv.Itoa(vsBlocks), "--durability", "durable"}
	if system == Amalgam {
		args = append(args, "--suspect-after", "0")
	}
	st, err := startProc(b, dir, system, "dev cluster ready at", b.server, args...)
	if err != nil {
		return nil, err
	}
	cl := &procCluster{entry: addr, system: system, device: deviceStat(dir)}
	cl.add(st)
	return cl, nil
}

// devPorts is how many consecutive ports startDev's cluster listens on:
// the entry address, then one per machine (a baseline's deployment may
// need more machines than --machines: RSPaxos's groups of 3f+1).
func devPorts(system string, blockSize int) (int, error) {
	if system == Amalgam {
		return 1 + vsMachines, nil
	}
	l := erasure.Layout{N: vsMachines, G: vsG, F: vsF, Stripes: (vsBlocks + vsG - 1) / vsG, BlockSize: blockSize}
	b, err := runtime.NewBaseline(system, l, paxos.Timing{})
	if err != nil {
		return 0, err
	}
	return 1 + b.Machines(), nil
}

// startEtcd starts an etcd cluster of n member processes.
func startEtcd(b vsBinaries, dir string, n int) (*procCluster, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	var initial, clients []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i]))
		clients = append(clients, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]))
	}
	cl := &procCluster{entry: strings.Join(clients, ","), system: "etcd"}
	type result struct {
		st  started
		err error
	}
	ch := make(chan result, n)
	for i := range n {
		go func() {
			st, err := startProc(b, dir, fmt.Sprintf("m%d", i), "ready", b.etcd, "serve",
				"--name", fmt.Sprintf("m%d", i), "--data-dir", filepath.Join(dir, fmt.Sprintf("m%d", i)),
				"--peer-url", fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]), "--client-url", clients[i],
				"--initial-cluster", strings.Join(initial, ","))
			ch <- result{st, err}
		}()
	}
	var errs []error
	for range n {
		s := <-ch
		if s.err != nil {
			errs = append(errs, s.err)
			continue
		}
		cl.add(s.st)
	}
	if len(errs) > 0 {
		cl.stop()
		return nil, errors.Join(errs...)
	}
	cl.device = deviceStat(dir) // dir exists once a member has started
	cl.fsyncs = func() (float64, bool) {
		var sum float64
		for _, u := range clients {
			v, err := etcdSyncs(u)
			if err != nil {
				return 0, false
			}
			sum += v
		}
		return sum, true
	}
	return cl, nil
}

// etcdSyncs reads a member's fsync count from its /metrics: WAL fsyncs
// plus backend (bbolt) commits, each of which syncs.
func etcdSyncs(clientURL string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var sum float64
	found := 0
	for _, line := range strings.Split(string(body), "\n") {
		for _, m := range []string{"etcd_disk_wal_fsync_duration_seconds_count ", "etcd_disk_backend_commit_duration_seconds_count "} {
			if v, ok := strings.CutPrefix(line, m); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return 0, err
				}
				sum += f
				found++
			}
		}
	}
	if found != 2 {
		return 0, fmt.Errorf("%s/metrics: fsync counters not found", clientURL)
	}
	return sum, nil
}

// runVsLoad runs amalgam-etcd load against cl and reads the servers'
// counters when the measured interval starts and ends.
func runVsLoad(ctx context.Context, b vsBinaries, cl *procCluster, w VsWorkload, o VsEtcdOptions) (VsPoint, error) {
	p := VsPoint{Workload: w.Name(), VsWorkload: w, Processes: len(cl.pids)}
	c := exec.CommandContext(ctx, b.etcd, "load", "--system", cl.system, "--endpoints", cl.entry,
		"--workload", w.Workload, "--block-size", strconv.Itoa(w.BlockSize), "--blocks", strconv.Itoa(vsBlocks),
		"--clients", strconv.Itoa(w.Clients), "--warmup", o.Warmup.String(), "--duration", o.Duration.String(),
		"--seed", strconv.FormatUint(o.Seed, 10), "--min-ops", strconv.FormatInt(o.MinOps, 10))
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.StdoutPipe()
	if err != nil {
		return p, err
	}
	if err := c.Start(); err != nil {
		return p, err
	}
	var c0, c1 counters
	var l0, l1 time.Duration
	var readErr error
	var last string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		switch line := sc.Text(); line {
		case "start":
			c0, readErr = cl.read()
			if readErr == nil {
				l0, readErr = procCPU(c.Process.Pid)
			}
		case "end":
			if readErr == nil {
				c1, readErr = cl.read()
			}
			if readErr == nil {
				l1, readErr = procCPU(c.Process.Pid)
			}
		default:
			last = line
		}
	}
	if err := c.Wait(); err != nil {
		return p, fmt.Errorf("load: %v: %s", err, lastLines(stderr.String(), 5))
	}
	if readErr != nil {
		return p, readErr
	}
	if err := json.Unmarshal([]byte(last), &p.Result); err != nil {
		return p, fmt.Errorf("load printed %q: %v", last, err)
	}
	if p.Ops > 0 {
		ops := float64(p.Ops)
		p.CPUusPerOp = float64((c1.cpu - c0.cpu).Microseconds()) / ops
		p.LoadCPUusPerOp = float64((l1 - l0).Microseconds()) / ops
		p.DiskPerLogical = float64(c1.diskBytes-c0.diskBytes) / (ops * float64(w.BlockSize))
		if c0.hasDevice && c1.hasDevice {
			f := float64(c1.device-c0.device) / (ops * float64(w.BlockSize))
			p.DevicePerLogical = &f
		}
		if c0.hasMetric && c1.hasMetric {
			f := (c1.metricSyncs - c0.metricSyncs) / ops
			p.MetricSyncsPerOp = &f
		}
		if c0.hasSyncCalls && c1.hasSyncCalls {
			f := (c1.syncCalls - c0.syncCalls) / ops
			p.SyncCallsPerOp = &f
		}
	}
	return p, nil
}

// procCPU is a process's user+system CPU time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(u+st) * time.Second / clockTicks, nil
}

// procWriteBytes is write_bytes from /proc/<pid>/io: bytes the process
// caused to be sent to the storage layer.
func procWriteBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/io: no write_bytes", pid)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// freePorts returns n ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// freePortRange returns the first of n consecutive free ports.
func freePortRange(n int) (int, error) {
	for try := 0; try < 100; try++ {
		ps, err := freePorts(1)
		if err != nil {
			return 0, err
		}
		base := ps[0]
		if base+n > 65535 {
			continue
		}
		var lns []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			_ = l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no range of free ports found")
}
