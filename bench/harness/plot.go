package harness

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure size; the legend has a column of its own to the right of the
// axes, so it never covers data.
const (
	figW, figH = 7.5 * vg.Inch, 4.5 * vg.Inch
	legendW    = 2 * vg.Inch
)

// figure is one plot and its legend, drawn side by side.
type figure struct {
	p      *plot.Plot
	legend plot.Legend
	labels []string // the legend's entries
	name   string
	// What it shows: experiment, series, and the metrics on each axis.
	exp, series string
	fx, fy      func(Point) float64
}

func (f *figure) addLegend(label string, thumbs ...plot.Thumbnailer) {
	f.legend.Add(label, thumbs...)
	f.labels = append(f.labels, label)
}

// layout splits a canvas into the plot's part and the legend's column.
func layout(c draw.Canvas) (plotC, legendC draw.Canvas) {
	return draw.Crop(c, 0, -legendW, 0, 0), draw.Crop(c, c.Size().X-legendW+vg.Points(8), 0, 0, -vg.Points(30))
}

// draw draws the figure on c.
// render draws f on c over a white background and returns the drawing
// area.
func (f *figure) render(c vg.CanvasSizer) draw.Canvas {
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	f.draw(dc)
	return dc
}

func (f *figure) draw(c draw.Canvas) {
	pc, lc := layout(c)
	f.p.Draw(pc)
	f.legend.Draw(lc)
}

// plainTicks labels ticks without exponents (1000000, not 1e+06).
type plainTicks struct{ plot.Ticker }

func (t plainTicks) Ticks(min, max float64) []plot.Tick {
	ts := t.Ticker.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = plain(ts[i].Value)
		}
	}
	return ts
}

// subtitle says what kind of run produced the numbers.
func (r *Report) subtitle() string {
	return fmt.Sprintf("%s runs on a small machine (%d cores, %s transport): compare shapes", r.Mode, r.Cores, r.Transport)
}

// series is one system's points of one experiment and series, sorted by
// the experiment's parameter.
func (r *Report) series(exp, system, series string) []Point {
	var pts []Point
	for _, pt := range r.Points {
		if pt.Experiment == exp && pt.System == system && pt.Series == series {
			pts = append(pts, pt)
		}
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
	return pts
}

// lineFigure draws metric fy against metric fx for each system's points
// of one experiment and series; nil when there are none.
func (r *Report) lineFigure(exp, series, title, xl, yl string, logX bool, fx, fy func(Point) float64, name string) (*figure, error) {
	f := &figure{p: plot.New(), legend: plot.NewLegend(), name: name, exp: exp, series: series, fx: fx, fy: fy}
	f.legend.Top, f.legend.Left = true, true
	f.legend.TextStyle.Font.Size = vg.Points(10)
	p := f.p
	p.Title.Text = title + "\n" + r.subtitle()
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text, p.Y.Label.Text = xl, yl
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plainTicks{plot.LogTicks{Prec: -1}}
	}
	added := 0
	for i, sys := range Systems {
		pts := r.series(exp, sys, series)
		if len(pts) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(pts))
		for j, pt := range pts {
			xys[j].X, xys[j].Y = fx(pt), fy(pt)
		}
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
		l.Dashes, s.Shape = plotutil.Dashes(i), plotutil.Shape(i)
		p.Add(l, s)
		f.addLegend(sys, l, s)
		added++
	}
	if added == 0 {
		return nil, nil
	}
	return f, nil
}

// fromZero starts the y axis (and a linear x axis) at zero, so that
// differences are not magnified.
func fromZero(p *plot.Plot) {
	p.Y.Min = 0
	if _, log := p.X.Scale.(plot.LogScale); !log {
		p.X.Min = min(p.X.Min, 0)
	}
}

// addReferences draws each baseline's single "reference" run of exp as a
// dashed horizontal line across the x range (baselines have no stripes).
func (r *Report) addReferences(f *figure, exp string, fy func(Point) float64) error {
	for i, sys := range Systems {
		pts := r.series(exp, sys, "reference")
		if len(pts) == 0 {
			continue
		}
		y := fy(pts[0])
		l, err := plotter.NewLine(plotter.XYs{{X: f.p.X.Min, Y: y}, {X: f.p.X.Max, Y: y}})
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		f.p.Add(l)
		f.addLegend(sys+" (no stripes)", l)
	}
	return nil
}

// figures builds every figure the report has data for.
func (r *Report) figures() ([]*figure, error) {
	x := func(p Point) float64 { return p.X }
	ops := func(p Point) float64 { return p.OpsPerSec }
	mbs := func(p Point) float64 { return p.MBPerSec }
	p50 := func(p Point) float64 { return p.P50ms }
	has := func(exp string) bool {
		return slices.ContainsFunc(r.Experiments, func(e ExperimentInfo) bool { return e.Name == exp })
	}
	type spec struct {
		exp, series, title, xl, yl string
		logX                       bool
		fx, fy                     func(Point) float64
		name                       string
	}
	var specs []spec
	if has("blocksize") {
		specs = append(specs,
			spec{"blocksize", "write", "Write throughput vs block size (thesis fig 3.7)", "block size (bytes)", "MB/s", true, x, mbs, "blocksize-throughput.svg"},
			spec{"blocksize", "write", "Write latency vs block size (thesis fig 3.8)", "block size (bytes)", "p50 latency (ms)", true, x, p50, "blocksize-latency.svg"})
	}
	for _, s := range []string{"128KiB", "64B"} {
		if has("scalability") {
			specs = append(specs, spec{"scalability", s, "Write throughput vs groups, " + s + " (thesis fig 3.9/3.10)", "groups", "ops/s", false, x, ops, "scalability-" + s + ".svg"})
		}
	}
	for _, s := range []string{"128KiB", "64B"} {
		if has("rmw") {
			specs = append(specs, spec{"rmw", s, "RMW latency vs throughput, " + s + " (thesis fig 3.11/3.12)", "throughput (ops/s)", "p50 latency (ms)", false, ops, p50, "rmw-" + s + ".svg"})
		}
	}
	if has("stripe") {
		specs = append(specs, spec{"stripe", "128KiB", "128 KiB write throughput vs g, f=2 (thesis fig 3.16/3.17)", "data blocks per stripe (g)", "ops/s", false, x, ops, "stripe.svg"})
	}
	var out []*figure
	for _, s := range specs {
		f, err := r.lineFigure(s.exp, s.series, s.title, s.xl, s.yl, s.logX, s.fx, s.fy, s.name)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		fromZero(f.p)
		if s.exp == "stripe" {
			if err := r.addReferences(f, s.exp, s.fy); err != nil {
				return nil, err
			}
		}
		f.p.Y.Max *= 1.05 // room above the highest point
		out = append(out, f)
	}
	return out, nil
}

// Plot writes one SVG per figure into dir and returns the files written.
func (r *Report) Plot(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	figs, err := r.figures()
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range figs {
		c := vgsvg.New(figW, figH)
		f.render(c)
		path := filepath.Join(dir, f.name)
		w, err := os.Create(path)
		if err != nil {
			return files, err
		}
		_, err = c.WriteTo(w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return files, fmt.Errorf("plot %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}
