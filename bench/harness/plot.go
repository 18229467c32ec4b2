package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot writes one SVG per figure into dir and returns the files written.
func (r *Report) Plot(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	save := func(p *plot.Plot, name string) error {
		f := filepath.Join(dir, name)
		if err := p.Save(6*vg.Inch, 4*vg.Inch, f); err != nil {
			return fmt.Errorf("plot %s: %w", f, err)
		}
		files = append(files, f)
		return nil
	}
	// line draws metric y against metric x for each system's points of
	// one experiment and series, sorted by the experiment's parameter.
	line := func(exp, series, title, xl, yl string, logX bool, fx, fy func(Point) float64, name string) error {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text, p.Y.Label.Text = xl, yl
		if logX {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		var args []any
		for _, sys := range Systems {
			var pts []Point
			for _, pt := range r.Points {
				if pt.Experiment == exp && pt.System == sys && pt.Series == series {
					pts = append(pts, pt)
				}
			}
			if len(pts) == 0 {
				continue
			}
			slices.SortFunc(pts, func(a, b Point) int {
				switch {
				case a.X < b.X:
					return -1
				case a.X > b.X:
					return 1
				}
				return 0
			})
			xys := make(plotter.XYs, len(pts))
			for i, pt := range pts {
				xys[i].X, xys[i].Y = fx(pt), fy(pt)
			}
			args = append(args, sys, xys)
		}
		if len(args) == 0 {
			return nil
		}
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return err
		}
		p.Legend.Top = true
		return save(p, name)
	}
	x := func(p Point) float64 { return p.X }
	ops := func(p Point) float64 { return p.OpsPerSec }
	mbs := func(p Point) float64 { return p.MBPerSec }
	p50 := func(p Point) float64 { return p.P50ms }
	has := func(exp string) bool {
		return slices.ContainsFunc(r.Experiments, func(e ExperimentInfo) bool { return e.Name == exp })
	}
	steps := []func() error{}
	if has("blocksize") {
		steps = append(steps,
			func() error {
				return line("blocksize", "write", "Write throughput vs block size (fig 3.7)", "block size (bytes)", "MB/s", true, x, mbs, "blocksize-throughput.svg")
			},
			func() error {
				return line("blocksize", "write", "Write latency vs block size (fig 3.8)", "block size (bytes)", "p50 latency (ms)", true, x, p50, "blocksize-latency.svg")
			})
	}
	if has("scalability") {
		for _, s := range []string{"128KiB", "64B"} {
			steps = append(steps, func() error {
				return line("scalability", s, "Write throughput vs groups, "+s+" (fig 3.9/3.10)", "groups", "ops/s", false, x, ops, "scalability-"+s+".svg")
			})
		}
	}
	if has("rmw") {
		for _, s := range []string{"128KiB", "64B"} {
			steps = append(steps, func() error {
				return line("rmw", s, "RMW throughput vs latency, "+s+" (fig 3.11/3.12)", "throughput (ops/s)", "p50 latency (ms)", false, ops, p50, "rmw-"+s+".svg")
			})
		}
	}
	if has("stripe") {
		steps = append(steps, func() error {
			return line("stripe", "128KiB", "Amalgam 128 KiB write throughput vs g, f=2 (fig 3.16/3.17)", "data blocks per stripe (g)", "ops/s", false, x, ops, "stripe.svg")
		})
	}
	for _, st := range steps {
		if err := st(); err != nil {
			return files, err
		}
	}
	return files, nil
}
