package harness

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
)

// Report is the result of one invocation.
type Report struct {
	Mode            string           `json:"mode"` // quick or full
	Durability      string           `json:"durability"`
	Transport       string           `json:"transport"` // grpc or sim
	Host            string           `json:"host"`
	Cores           int              `json:"cores"`
	GoVersion       string           `json:"go_version"`
	OS              string           `json:"os"`
	LinkBytesPerSec float64          `json:"link_bytes_per_sec"` // 0: unlimited
	WarmupSec       float64          `json:"warmup_sec"`
	DurationSec     float64          `json:"duration_sec"`
	Seed            uint64           `json:"seed"`
	Started         string           `json:"started"`
	Experiments     []ExperimentInfo `json:"experiments"`
	Points          []Point          `json:"points"`
	Ratios          []Ratio          `json:"ratios"`
	Targets         []Target         `json:"targets,omitempty"`
}

// ExperimentInfo describes an experiment in the report.
type ExperimentInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Figures string `json:"thesis_figures"`
	XName   string `json:"x_name"`
}

// Ratio compares Amalgam with a baseline at one point of an experiment.
type Ratio struct {
	Experiment string  `json:"experiment"`
	Series     string  `json:"series"`
	X          float64 `json:"x"`
	Baseline   string  `json:"baseline"`
	// Amalgam's value divided by the baseline's.
	Throughput float64 `json:"throughput"`
	P50        float64 `json:"p50_latency"`
	P99        float64 `json:"p99_latency"`
	Stored     float64 `json:"stored_bytes,omitempty"`
}

// Target is one of the evaluation's targets, as measured.
type Target struct {
	Name     string  `json:"name"`
	Want     string  `json:"want"`
	Measured float64 `json:"measured"`
	Met      bool    `json:"met"`
}

func (r *Report) find(exp, system, series string, x float64) (Point, bool) {
	for _, p := range r.Points {
		if p.Experiment == exp && p.System == system && p.Series == series && p.X == x {
			return p, true
		}
	}
	return Point{}, false
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (r *Report) computeRatios() {
	r.Ratios = nil
	for _, a := range r.Points {
		if a.System != Amalgam {
			continue
		}
		for _, base := range []string{ShardedPaxos, RSPaxos} {
			b, ok := r.find(a.Experiment, base, a.Series, a.X)
			if !ok && a.Experiment == "stripe" {
				b, ok = r.find(a.Experiment, base, "reference", 0)
			}
			if !ok {
				continue
			}
			r.Ratios = append(r.Ratios, Ratio{Experiment: a.Experiment, Series: a.Series, X: a.X, Baseline: base,
				Throughput: div(a.OpsPerSec, b.OpsPerSec), P50: div(a.P50ms, b.P50ms), P99: div(a.P99ms, b.P99ms),
				Stored: div(a.StoredPerLogical, b.StoredPerLogical)})
		}
	}
}

// peak is the highest throughput of a system in an experiment's series.
func (r *Report) peak(exp, system, series string) float64 {
	best := 0.0
	for _, p := range r.Points {
		if p.Experiment == exp && p.System == system && p.Series == series {
			best = math.Max(best, p.OpsPerSec)
		}
	}
	return best
}

func (r *Report) computeTargets() {
	r.Targets = nil
	add := func(name, want string, v, min float64) {
		if v > 0 {
			r.Targets = append(r.Targets, Target{Name: name, Want: want, Measured: v, Met: v >= min})
		}
	}
	const k128 = 128 << 10
	if a, ok := r.find("blocksize", Amalgam, "write", k128); ok {
		if b, ok := r.find("blocksize", ShardedPaxos, "write", k128); ok {
			add("128 KiB write throughput, Amalgam/ShardedPaxos", ">= 0.9", div(a.OpsPerSec, b.OpsPerSec), 0.9)
		}
	}
	a := r.peak("rmw", Amalgam, "128KiB")
	add("128 KiB RMW peak throughput, Amalgam/ShardedPaxos", ">= 0.85", div(a, r.peak("rmw", ShardedPaxos, "128KiB")), 0.85)
	add("128 KiB RMW peak throughput, Amalgam/RSPaxos", ">= 2", div(a, r.peak("rmw", RSPaxos, "128KiB")), 2)
	for _, p := range r.Points {
		if p.Experiment == "storage" && p.System == Amalgam && p.StoredPerLogical > 0 {
			want := float64(p.F) / float64(p.G)
			got := p.StoredPerLogical - 1
			r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("Amalgam storage overhead vs f/g=%.3f", want),
				Want: "within 10% of f/g", Measured: got, Met: math.Abs(got-want) <= 0.1*want})
		}
	}
}

var csvHeader = []string{"experiment", "system", "series", "x", "transport", "durability", "workload", "keys", "block_size", "groups", "machines", "g", "f", "clients",
	"seconds", "ops", "errors", "ops_per_sec", "mb_per_sec", "p50_ms", "p99_ms", "p999_ms", "cpu_us_per_op", "net_bytes_per_op", "stored_per_logical_byte", "link_bytes_per_sec",
	"syncs_per_op", "disk_bytes_per_logical_byte"}

// WriteCSV writes one row per point.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, p := range r.Points {
		row := []string{p.Experiment, p.System, p.Series, f(p.X), p.Transport, p.Durability, p.Workload, p.Keys, strconv.Itoa(p.BlockSize),
			strconv.Itoa(p.Groups), strconv.Itoa(p.Machines), strconv.Itoa(p.G), strconv.Itoa(p.F), strconv.Itoa(p.Clients),
			f(p.Seconds), strconv.FormatInt(p.Ops, 10), strconv.FormatInt(p.Errors, 10), f(p.OpsPerSec), f(p.MBPerSec),
			f(p.P50ms), f(p.P99ms), f(p.P999ms), f(p.CPUus), f(p.NetBytesPerOp), f(p.StoredPerLogical), f(p.Bandwidth),
			f(p.SyncsPerOp), f(p.DiskPerLogical)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteText prints the report as tables.
func (r *Report) WriteText(w io.Writer) error {
	net := "production runtime, gRPC on loopback"
	if r.Transport == TransportSim {
		net = "simulated links, unlimited"
		if r.LinkBytesPerSec > 0 {
			net = fmt.Sprintf("simulated links, %.1f MB/s per machine and direction", r.LinkBytesPerSec/1e6)
		}
	}
	fmt.Fprintf(w, "mode %s, durability %s, %d cores, %s, warm-up %.2fs, measured %.2fs per run, seed %d\n",
		r.Mode, r.Durability, r.Cores, net, r.WarmupSec, r.DurationSec, r.Seed)
	for _, e := range r.Experiments {
		fmt.Fprintf(w, "\n== %s: %s (thesis %s)\n", e.Name, e.Title, e.Figures)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		// The x column is the clients column when clients vary.
		clientsCol := "\tclients"
		if e.XName == "clients" {
			clientsCol = ""
		}
		durable := r.Durability == "durable"
		diskCols := ""
		if durable {
			diskCols = "syncs/op\tdisk B/B\t"
		}
		fmt.Fprintf(tw, "system\tseries\t%s%s\tops/s\tMB/s\tp50 ms\tp99 ms\tp99.9 ms\tcpu us/op\tnet B/op\tstored/logical\t%s\n", e.XName, clientsCol, diskCols)
		for _, p := range r.Points {
			if p.Experiment != e.Name {
				continue
			}
			net := "-" // not measured on gRPC
			if p.Transport == TransportSim {
				net = fmt.Sprintf("%.0f", p.NetBytesPerOp)
			}
			clients := ""
			if clientsCol != "" {
				clients = fmt.Sprintf("\t%d", p.Clients)
			}
			disk := ""
			if durable {
				disk = fmt.Sprintf("%.2f\t%.2f\t", p.SyncsPerOp, p.DiskPerLogical)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s%s\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%s\t%.3f\t%s\n", p.System, p.Series, plain(p.X), clients,
				p.OpsPerSec, p.MBPerSec, p.P50ms, p.P99ms, p.P999ms, p.CPUus, net, p.StoredPerLogical, disk)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, ra := range r.Ratios {
			if ra.Experiment == e.Name {
				fmt.Fprintf(w, "  amalgam/%s %s %s=%s: throughput %.2fx, p50 %.2fx, p99 %.2fx\n", ra.Baseline, ra.Series, e.XName, plain(ra.X), ra.Throughput, ra.P50, ra.P99)
			}
		}
	}
	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "\n== targets\n")
		for _, t := range r.Targets {
			met := "MET"
			if !t.Met {
				met = "NOT MET"
			}
			fmt.Fprintf(w, "  %s: %.3f (want %s) %s\n", t.Name, t.Measured, t.Want, met)
		}
	}
	return nil
}

// plain prints x without an exponent: 1048576, not 1.048576e+06.
func plain(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
