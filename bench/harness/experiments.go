package harness

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
)

// Options apply to every experiment of an invocation.
type Options struct {
	Quick    bool
	Warmup   time.Duration // 0: 1 s (quick: 250 ms)
	Duration time.Duration // 0: 5 s (quick: 900 ms)
	Seed     uint64
	Keys     string  // "uniform" (default) or "zipf"
	Zipf     float64 // zipf exponent
	// Bandwidth per machine link in bytes/s; 0 picks DefaultBandwidth,
	// negative means unlimited.
	Bandwidth float64
	// Transport is TransportGRPC (default: the production runtime on
	// loopback; Bandwidth does not apply) or TransportSim (the in-process
	// host and its network model).
	Transport string
	// Durability is "memory" (default: nothing persisted) or "durable"
	// (TransportGRPC only: every machine syncs a pebble store in a
	// temporary directory, as amalgam-server dev --durability durable).
	Durability string
	// Systems, if not empty, limits the runs to these systems.
	Systems []string
	// Progress, if set, is called as runs start and advance.
	Progress func(run, runs int, label string, done float64)
}

// ThesisBandwidthPerCore is the thesis testbed's link speed per vCPU:
// 12.5 Gbit/s links on 8-vCPU machines (thesis 3.6.1).
const ThesisBandwidthPerCore = 12.5e9 / 8 / 8 // bytes/s

// ReferenceMachines is the machine count the default bandwidth is scaled
// for (the 7 machines of the default deployment).
const ReferenceMachines = 7

// DefaultBandwidth gives each simulated machine the thesis's ratio of
// link bandwidth to CPU: this process's cores shared by 7 machines.
func DefaultBandwidth() float64 {
	return ThesisBandwidthPerCore * float64(Cores()) / ReferenceMachines
}

func (o Options) bandwidth() float64 {
	switch {
	case o.Bandwidth < 0:
		return 0
	case o.Bandwidth == 0:
		return DefaultBandwidth()
	}
	return o.Bandwidth
}

func (o Options) transport() string {
	if o.Transport == "" {
		return TransportGRPC
	}
	return o.Transport
}

func (o Options) durability() string { return durabilityOr(o.Durability) }

// durabilityOr is d, or "memory" if d is empty.
func durabilityOr(d string) string {
	if d == "" {
		return "memory"
	}
	return d
}

func (o Options) timing() (warm, dur time.Duration) {
	warm, dur = o.Warmup, o.Duration
	if warm <= 0 {
		warm = time.Second
		if o.Quick {
			warm = 250 * time.Millisecond
		}
	}
	if dur <= 0 {
		dur = 5 * time.Second
		if o.Quick {
			dur = 900 * time.Millisecond
		}
	}
	return warm, dur
}

// Experiment is one figure (or table) of the thesis evaluation.
type Experiment struct {
	Name, Title, Figures string
	// XName is the parameter the experiment varies.
	XName string
	runs  func(o Options) []plannedRun
}

type plannedRun struct {
	spec RunSpec
	x    float64
	// series names the curve the point belongs to within its system
	// (e.g. "128KiB").
	series string
}

// Experiments in the order `bench all` runs them.
var Experiments = []Experiment{
	{Name: "blocksize", Title: "Write-only throughput and latency against block size", Figures: "3.7, 3.8", XName: "block_size", runs: blockSizeRuns},
	{Name: "scalability", Title: "Write-only throughput against the number of groups", Figures: "3.9, 3.10", XName: "groups", runs: scalabilityRuns},
	{Name: "rmw", Title: "RMW throughput against latency as load rises", Figures: "3.11, 3.12", XName: "clients", runs: rmwRuns},
	{Name: "stripe", Title: "Amalgam write throughput against data blocks per stripe (f=2)", Figures: "3.16, 3.17", XName: "g", runs: stripeRuns},
	{Name: "storage", Title: "Storage overhead measured from bytes stored", Figures: "3.6.2 (storage)", XName: "block_size", runs: storageRuns},
}

// ExperimentNames lists the experiment names.
func ExperimentNames() []string {
	var out []string
	for _, e := range Experiments {
		out = append(out, e.Name)
	}
	return out
}

// baseLayout is the default deployment: 7 machines, each with a data and
// a parity server (Amalgam: g=5, f=2, w=0) or 7 Paxos groups with f=2;
// about 64 MiB of blocks (at least 35).
func baseLayout(n, g, blockSize int) erasure.Layout {
	blocks := max(35, min(3500, (64<<20)/blockSize))
	return erasure.Layout{N: n, G: g, F: 2, W: 0, Stripes: (blocks + g - 1) / g, BlockSize: blockSize}
}

func (o Options) spec(exp, system string, l erasure.Layout, w Workload, clients int) RunSpec {
	warm, dur := o.timing()
	w.Seed = o.Seed
	if w.Keys == "" {
		w.Keys, w.Zipf = o.Keys, o.Zipf
		if w.Keys == "" {
			w.Keys = "uniform"
		}
	}
	return RunSpec{Experiment: exp, System: system, Layout: l, Workload: w, Clients: clients,
		Warmup: warm, Duration: dur, Net: NetOptions{Bandwidth: o.bandwidth()}, Transport: o.transport(),
		Durability: o.durability()}
}

func sizeLabel(b int) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

func blockSizeRuns(o Options) []plannedRun {
	sizes := []int{64, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20}
	clients := 32
	if o.Quick {
		sizes = []int{64, 4 << 10, 128 << 10, 1 << 20}
		clients = 16
	}
	var out []plannedRun
	for _, s := range sizes {
		for _, sys := range Systems {
			out = append(out, plannedRun{spec: o.spec("blocksize", sys, baseLayout(7, 5, s), Workload{Write: 1}, clients), x: float64(s), series: "write"})
		}
	}
	return out
}

func scalabilityRuns(o Options) []plannedRun {
	groups := []int{4, 7, 10, 14}
	perGroup := 4
	if o.Quick {
		groups = []int{4, 7}
		perGroup = 2
	}
	var out []plannedRun
	for _, s := range []int{128 << 10, 64} {
		for _, n := range groups {
			for _, sys := range Systems {
				out = append(out, plannedRun{spec: o.spec("scalability", sys, baseLayout(n, 2, s), Workload{Write: 1}, perGroup*n), x: float64(n), series: sizeLabel(s)})
			}
		}
	}
	return out
}

func rmwRuns(o Options) []plannedRun {
	loads := []int{1, 4, 16, 32, 64}
	if o.Quick {
		loads = []int{2, 16}
	}
	var out []plannedRun
	for _, s := range []int{128 << 10, 64} {
		for _, c := range loads {
			for _, sys := range Systems {
				out = append(out, plannedRun{spec: o.spec("rmw", sys, baseLayout(7, 5, s), Workload{RMW: 1}, c), x: float64(c), series: sizeLabel(s)})
			}
		}
	}
	return out
}

func stripeRuns(o Options) []plannedRun {
	gs := []int{1, 2, 3, 4, 5}
	clients := 32
	if o.Quick {
		gs = []int{2, 5}
		clients = 16
	}
	var out []plannedRun
	for _, g := range gs {
		out = append(out, plannedRun{spec: o.spec("stripe", Amalgam, baseLayout(7, g, 128<<10), Workload{Write: 1}, clients), x: float64(g), series: "128KiB"})
	}
	// The baselines do not have stripes: one reference run each.
	for _, sys := range Systems[1:] {
		out = append(out, plannedRun{spec: o.spec("stripe", sys, baseLayout(7, 5, 128<<10), Workload{Write: 1}, clients), x: 0, series: "reference"})
	}
	return out
}

func storageRuns(o Options) []plannedRun {
	size := 16 << 10
	var out []plannedRun
	for _, sys := range Systems {
		l := baseLayout(7, 5, size)
		l.Stripes = 30 // 150 blocks, every one written once
		if !o.Quick {
			l.Stripes = 200
		}
		sp := o.spec("storage", sys, l, Workload{Write: 1, Keys: "seq"}, 8)
		sp.Duration = 60 * time.Second // an upper bound: the run ends when every block is written
		out = append(out, plannedRun{spec: sp, x: float64(size), series: "fill"})
	}
	return out
}

// Lookup returns the experiments named ("all" for every one).
func Lookup(names []string) ([]Experiment, error) {
	var out []Experiment
	for _, n := range names {
		if n == "all" {
			return Experiments, nil
		}
		i := slices.IndexFunc(Experiments, func(e Experiment) bool { return e.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown experiment %q (want all or one of %s)", n, strings.Join(ExperimentNames(), ", "))
		}
		out = append(out, Experiments[i])
	}
	return out, nil
}

// Execute runs the experiments and builds the report.
func Execute(exps []Experiment, o Options) (*Report, error) {
	var plan []plannedRun
	for _, e := range exps {
		for _, pr := range e.runs(o) {
			if len(o.Systems) == 0 || slices.Contains(o.Systems, pr.spec.System) {
				plan = append(plan, pr)
			}
		}
	}
	warm, dur := o.timing()
	rep := &Report{
		Mode: "full", Durability: o.durability(), Transport: o.transport(),
		Host:  "production runtime (package runtime): a local cluster of gRPC hosts on loopback per system, clients through package client",
		Cores: Cores(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		WarmupSec: warm.Seconds(), DurationSec: dur.Seconds(), Seed: o.Seed,
		Started: time.Now().UTC().Format(time.RFC3339),
	}
	if rep.Transport == TransportSim {
		rep.Host = "production runtime hosts (package runtime), one per machine and one for the clients, over simulated links (bench/harness/simnet.go)"
		rep.LinkBytesPerSec = o.bandwidth()
	}
	if o.Quick {
		rep.Mode = "quick"
	}
	for _, e := range exps {
		rep.Experiments = append(rep.Experiments, ExperimentInfo{Name: e.Name, Title: e.Title, Figures: e.Figures, XName: e.XName})
	}
	for i, pr := range plan {
		sp := pr.spec
		label := fmt.Sprintf("%s %s %s=%g %s", sp.Experiment, sp.System, xName(exps, sp.Experiment), pr.x, pr.series)
		if o.Progress != nil {
			o.Progress(i, len(plan), label, 0)
			sp.Progress = func(d float64) { o.Progress(i, len(plan), label, d) }
		}
		p, err := Run(sp)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		if p.Ops == 0 {
			return nil, fmt.Errorf("%s: no operation completed", label)
		}
		p.X, p.Series = pr.x, pr.series
		rep.Points = append(rep.Points, p)
	}
	rep.computeRatios()
	rep.computeTargets()
	return rep, nil
}

func xName(exps []Experiment, name string) string {
	for _, e := range exps {
		if e.Name == name {
			return e.XName
		}
	}
	return "x"
}
