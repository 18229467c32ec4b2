package harness

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Plot draws throughput and p99 latency per bucket over time, the events marked,
// into dir/recovery-<block size>.svg and dir/recovery-<block size>-p99.svg.
func (r *RecoveryReport) Plot(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := "recovery-" + sizeLabel(r.BlockSize)
	var files []string
	for _, f := range []struct {
		file, label string
		y           func(RecoveryBucket) float64
		skipEmpty   bool
	}{
		{base + ".svg", "client writes (MB/s)", func(b RecoveryBucket) float64 { return b.MBPerSec }, false},
		{base + "-p99.svg", "p99 latency of the writes completed (ms)", func(b RecoveryBucket) float64 { return b.P99ms }, true},
	} {
		p, err := r.timePlot(f.label, f.y, f.skipEmpty)
		if err != nil {
			return files, err
		}
		path := filepath.Join(dir, f.file)
		if err := p.Save(10*vg.Inch, 5*vg.Inch, path); err != nil {
			return files, fmt.Errorf("plot %s: %w", path, err)
		}
		files = append(files, path)
	}
	return files, nil
}

// timePlot is one metric per bucket over time with a labelled vertical
// line at each event.
func (r *RecoveryReport) timePlot(ylabel string, y func(RecoveryBucket) float64, skipEmpty bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (%s, n=%d g=%d f=%d, %s blocks, %.0f MiB per machine, %d clients): machine %d killed",
		r.System, r.Durability, r.N, r.G, r.F, sizeLabel(r.BlockSize), float64(r.HeldBytes)/(1<<20), r.Clients, r.Victim)
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = fmt.Sprintf("time since the load started (s; %v buckets)", r.Bucket)
	p.Y.Label.Text = ylabel
	// A bucket where nothing completed has no latency: the p99 line
	// breaks there instead of dropping to 0.
	var segs []plotter.XYs
	var seg plotter.XYs
	top := 0.0
	for _, b := range r.Buckets {
		if skipEmpty && b.Ops == 0 {
			if len(seg) > 0 {
				segs, seg = append(segs, seg), nil
			}
			continue
		}
		seg = append(seg, plotter.XY{X: b.StartS + r.Bucket.Seconds()/2, Y: y(b)})
		top = max(top, y(b))
	}
	if len(seg) > 0 {
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("no buckets to plot")
	}
	for _, xys := range segs {
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		line.Width = vg.Points(1.2)
		p.Add(line)
	}
	top = max(top*1.15, 1)
	var labels plotter.XYLabels
	for i, e := range r.Events {
		v, err := plotter.NewLine(plotter.XYs{{X: e.AtS, Y: 0}, {X: e.AtS, Y: top}})
		if err != nil {
			return nil, err
		}
		v.Color = color.RGBA{R: 200, A: 255}
		v.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(v)
		// Stagger the labels: events can be a fraction of a second apart.
		labels.XYs = append(labels.XYs, plotter.XY{X: e.AtS, Y: top * (0.97 - 0.06*float64(i%4))})
		labels.Labels = append(labels.Labels, " "+e.Name)
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(8)
			l.TextStyle[i].Color = color.RGBA{R: 160, A: 255}
		}
		p.Add(l)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, r.Duration.Seconds(), 0, top
	p.Y.Tick.Marker = plainTicks{plot.DefaultTicks{}}
	return p, nil
}
