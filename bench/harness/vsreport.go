package harness

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// optional collects a measure some points lack.
type optional struct {
	xs      []float64
	missing bool
}

func (o *optional) add(x *float64) {
	if x == nil {
		o.missing = true
		return
	}
	o.xs = append(o.xs, *x)
}

// spread is nil if any point lacked the measure.
func (o *optional) spread() *Spread {
	if o.missing || len(o.xs) == 0 {
		return nil
	}
	s := spreadOf(o.xs)
	return &s
}

func medianOrNA(s *Spread) string {
	if s == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", s.Median)
}

// summarise fills r.Summary: per workload and system, medians over the
// rounds, Amalgam's per-round ops/s ratio to each other system, and
// ShardedPaxos's and RSPaxos's to each etcd cluster. A system that did
// not run a workload (Skipped) has no row for it.
func (r *VsReport) summarise(wls []VsWorkload) {
	r.Summary = nil
	for _, w := range wls {
		amalgam, sp, rs := r.opsByRound(w, Amalgam), r.opsByRound(w, ShardedPaxos), r.opsByRound(w, RSPaxos)
		for _, sys := range r.Systems {
			etcd := strings.HasPrefix(sys, "etcd")
			s := VsSummary{Workload: w.Name(), System: sys}
			var ops, mb, p50, p99, cpu, lcpu, disk []float64
			var calls, metric, device optional
			for _, p := range r.Points {
				if p.Workload != w.Name() || p.System != sys {
					continue
				}
				ops, mb, p50, p99 = append(ops, p.OpsPerSec), append(mb, p.MBPerSec), append(p50, p.P50ms), append(p99, p.P99ms)
				cpu, lcpu, disk = append(cpu, p.CPUusPerOp), append(lcpu, p.LoadCPUusPerOp), append(disk, p.DiskPerLogical)
				calls.add(p.SyncCallsPerOp)
				metric.add(p.MetricSyncsPerOp)
				device.add(p.DevicePerLogical)
				s.Retries += p.Retries
				s.Errors += p.Errors
				if a, ok := amalgam[p.Round]; ok && sys != Amalgam {
					s.RatioRounds = append(s.RatioRounds, div(a, p.OpsPerSec))
				}
				if a, ok := sp[p.Round]; ok && etcd {
					s.SPRatioRounds = append(s.SPRatioRounds, div(a, p.OpsPerSec))
				}
				if a, ok := rs[p.Round]; ok && etcd {
					s.RSRatioRounds = append(s.RSRatioRounds, div(a, p.OpsPerSec))
				}
			}
			if len(ops) == 0 {
				continue
			}
			s.OpsPerSec, s.MBPerSec, s.P50ms, s.P99ms = spreadOf(ops), spreadOf(mb), spreadOf(p50), spreadOf(p99)
			s.CPUusPerOp, s.LoadCPUusPerOp, s.DiskPerLogical = spreadOf(cpu), spreadOf(lcpu), spreadOf(disk)
			s.SyncCallsPerOp, s.MetricSyncsPerOp, s.DevicePerLogical = calls.spread(), metric.spread(), device.spread()
			s.Ratio, s.SPRatio, s.RSRatio = spreadOrNil(s.RatioRounds), spreadOrNil(s.SPRatioRounds), spreadOrNil(s.RSRatioRounds)
			r.Summary = append(r.Summary, s)
		}
	}
}

// opsByRound is sys's ops/s on w in every round it ran.
func (r *VsReport) opsByRound(w VsWorkload, sys string) map[int]float64 {
	out := map[int]float64{}
	for _, p := range r.Points {
		if p.Workload == w.Name() && p.System == sys {
			out[p.Round] = p.OpsPerSec
		}
	}
	return out
}

// spreadOrNil is xs's spread, nil if xs is empty.
func spreadOrNil(xs []float64) *Spread {
	if len(xs) == 0 {
		return nil
	}
	s := spreadOf(xs)
	return &s
}

// has reports whether sys ran: for a baseline the report then has a
// column of its ratios to etcd.
func (r *VsReport) has(sys string) bool { return slices.Contains(r.Systems, sys) }

// columns are the table's columns.
func (r *VsReport) columns() []string {
	cols := slices.Clone(vsColumns)
	if r.has(ShardedPaxos) {
		cols = append(cols, "ShardedPaxos / system, per round: median (min-max)")
	}
	if r.has(RSPaxos) {
		cols = append(cols, "RSPaxos / system, per round: median (min-max)")
	}
	return cols
}

// described says what each system of the run is.
func (r *VsReport) described() []string {
	var d []string
	if r.has(Amalgam) {
		d = append(d, "amalgam: amalgam-server dev, durable, n=5 g=3 f=2 (1 process)")
	}
	if r.has(ShardedPaxos) {
		d = append(d, "shardedpaxos: amalgam-server dev --protocol shardedpaxos, durable, 5 groups of 3 replicas + 2 witnesses (f=2) on 5 machines (1 process)")
	}
	if r.has(RSPaxos) {
		d = append(d, "rspaxos: amalgam-server dev --protocol rspaxos, durable, 5 groups of 7 replicas (f=2, 3 data + 4 parity pieces) on 7 machines (1 process)")
	}
	if slices.ContainsFunc(r.Systems, func(s string) bool { return strings.HasPrefix(s, "etcd") }) {
		d = append(d, "etcdN: N stock etcd members (N processes)")
	}
	return d
}

// WriteText prints the summary as a table.
func (r *VsReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "vs-etcd: %d rounds (systems alternated in every round), %v warm-up + %v measured per run, %d cores, load average %s -> %s\n",
		r.Rounds, r.Warmup, r.Duration, r.Cores, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "%s. Medians over rounds, (min-max).\n\n", strings.Join(r.described(), "; "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(r.columns(), "\t")+"\t")
	for _, s := range r.Summary {
		fmt.Fprintln(tw, strings.Join(r.cells(s), "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	r.writeSkipped(w)
	return nil
}

// writeSkipped lists the workloads a system did not run, and why.
func (r *VsReport) writeSkipped(w io.Writer) {
	for _, sys := range r.Systems {
		var names []string
		why := ""
		for _, k := range r.Skipped {
			if k.System == sys {
				names, why = append(names, k.Workload), k.Reason
			}
		}
		if len(names) > 0 {
			fmt.Fprintf(w, "\nnot run: %s on %s (%s)\n", sys, strings.Join(names, ", "), why)
		}
	}
}

var vsColumns = []string{"workload", "system", "ops/s median (min-max)", "MB/s", "p50 ms", "p99 ms", "server CPU us/op",
	"load generator CPU us/op", "fsync+fdatasync calls/op", "etcd metric syncs/op", "disk B / logical B", "device B / logical B", "Amalgam / system, per round: median (min-max)"}

// cells formats a summary row in the order of r.columns.
func (r *VsReport) cells(s VsSummary) []string {
	c := s.cells()
	if r.has(ShardedPaxos) {
		c = append(c, ratioCell(s.SPRatio))
	}
	if r.has(RSPaxos) {
		c = append(c, ratioCell(s.RSRatio))
	}
	return c
}

func ratioCell(s *Spread) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", s.Median, s.Min, s.Max)
}

// cells formats a summary row in the order of vsColumns.
func (s VsSummary) cells() []string {
	ratio := ratioCell(s.Ratio)
	if s.Retries > 0 {
		ratio += fmt.Sprintf(" [%d conflict retries]", s.Retries)
	}
	if s.Errors > 0 {
		ratio += fmt.Sprintf(" [%d errors]", s.Errors)
	}
	return []string{s.Workload, s.System,
		fmt.Sprintf("%s (%s-%s)", ratioStr(s.OpsPerSec.Median), ratioStr(s.OpsPerSec.Min), ratioStr(s.OpsPerSec.Max)),
		fmt.Sprintf("%.2f", s.MBPerSec.Median), fmt.Sprintf("%.2f", s.P50ms.Median), fmt.Sprintf("%.1f", s.P99ms.Median),
		fmt.Sprintf("%.0f", s.CPUusPerOp.Median), fmt.Sprintf("%.0f", s.LoadCPUusPerOp.Median), medianOrNA(s.SyncCallsPerOp), medianOrNA(s.MetricSyncsPerOp), fmt.Sprintf("%.2f", s.DiskPerLogical.Median), medianOrNA(s.DevicePerLogical), ratio}
}

func ratioStr(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

// Plot draws Amalgam's per-round ops/s ratio to each other system, per
// workload (points: rounds; bar: median), into dir/vs-etcd.svg.
func (r *VsReport) Plot(dir string) (string, error) {
	path := filepath.Join(dir, "vs-etcd.svg")
	return path, r.plotFile(path)
}

// plotFile draws the plot into path (its extension picks the format).
func (r *VsReport) plotFile(path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Amalgam (durable, n=5 g=3 f=2) / other system ops/s, per round (%d rounds)", r.Rounds)
	p.Y.Label.Text = "Amalgam / system (ops/s)"
	var names []string
	for _, s := range r.Summary {
		if !slices.Contains(names, s.Workload) {
			names = append(names, s.Workload)
		}
	}
	p.NominalX(names...)
	others := slices.DeleteFunc(slices.Clone(r.Systems), func(s string) bool { return s == Amalgam })
	width := 0.5 / float64(max(1, len(others)))
	top := 1.1
	for i, sys := range others {
		off := (float64(i) - float64(len(others)-1)/2) * width
		var med, pts plotter.XYs
		for wi, name := range names {
			for _, s := range r.Summary {
				if s.Workload != name || s.System != sys || s.Ratio == nil {
					continue
				}
				med = append(med, plotter.XY{X: float64(wi) + off, Y: s.Ratio.Median})
				for _, v := range s.RatioRounds {
					pts = append(pts, plotter.XY{X: float64(wi) + off, Y: v})
					top = max(top, v*1.05)
				}
			}
		}
		if len(med) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Radius: vg.Points(2), Color: plotutil.Color(i)}
		m, err := plotter.NewScatter(med)
		if err != nil {
			return err
		}
		m.GlyphStyle = draw.GlyphStyle{Shape: draw.BoxGlyph{}, Radius: vg.Points(4), Color: plotutil.Color(i)}
		p.Add(sc, m)
		p.Legend.Add("vs "+sys+": one round", sc)
		p.Legend.Add("vs "+sys+": median", m)
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one, plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(10)
	p.Y.Min, p.Y.Max = 0, top*1.3 // room for the legend
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	return p.Save(10*vg.Inch, 5*vg.Inch, path)
}

// Markdown prints the summary as a Markdown table (docs/performance.md).
func (r *VsReport) Markdown(w io.Writer) {
	cols := r.columns()
	fmt.Fprintln(w, "| "+strings.Join(cols, " | ")+" |")
	fmt.Fprintln(w, strings.Repeat("|---", len(cols))+"|")
	for _, s := range r.Summary {
		fmt.Fprintln(w, "| "+strings.Join(r.cells(s), " | ")+" |")
	}
	r.writeSkipped(w)
}
