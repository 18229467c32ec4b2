package harness

import (
	"bytes"
	"image"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotReport is a made-up report with a point for every figure; its
// values stay well above zero, as real ones do (208 to 299 ops/s).
func plotReport() *Report {
	r := &Report{Mode: "quick", Cores: 2, Transport: TransportSim}
	for _, e := range []string{"blocksize", "scalability", "rmw", "stripe"} {
		r.Experiments = append(r.Experiments, ExperimentInfo{Name: e})
	}
	for i, sys := range Systems {
		k := float64(i + 1)
		for _, bs := range []float64{64, 4096, 131072, 1048576} {
			r.Points = append(r.Points, Point{Experiment: "blocksize", System: sys, Series: "write", X: bs, MBPerSec: 20 + 5*k + bs/1e5, P50ms: 2 + k})
		}
		for _, s := range []string{"128KiB", "64B"} {
			for _, g := range []float64{1, 2, 4} {
				r.Points = append(r.Points, Point{Experiment: "scalability", System: sys, Series: s, X: g, OpsPerSec: 208 + 30*g + 10*k})
				r.Points = append(r.Points, Point{Experiment: "rmw", System: sys, Series: s, X: g, OpsPerSec: 250 + 20*g*k, P50ms: 3 + g})
			}
		}
		if sys == Amalgam {
			for _, g := range []float64{2, 5} {
				r.Points = append(r.Points, Point{Experiment: "stripe", System: sys, Series: "128KiB", X: g, OpsPerSec: 280 + 4*g})
			}
		} else {
			r.Points = append(r.Points, Point{Experiment: "stripe", System: sys, Series: "reference", OpsPerSec: 290 + 5*k})
		}
	}
	return r
}

// TestPlotLayout renders every figure to PNG and checks, in the figure's
// own coordinates: y axes start at zero and cover every point; the title
// fits the width; every data point lies inside the axes' data area; and
// the legend column, where the legend is drawn (it is not empty in the
// PNG), is disjoint from that data area, so the legend covers no data.
// The stripe figure shows the baselines as reference lines.
func TestPlotLayout(t *testing.T) {
	r := plotReport()
	figs, err := r.figures()
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 7 {
		t.Fatalf("%d figures, want 7", len(figs))
	}
	for _, f := range figs {
		c := vgimg.New(figW, figH)
		dc := f.render(c)
		var buf bytes.Buffer
		if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}

		pc, lc := layout(dc)
		data := f.p.DataCanvas(pc)
		if f.p.Y.Min != 0 {
			t.Errorf("%s: y axis starts at %v, want 0", f.name, f.p.Y.Min)
		}
		if w := f.p.Title.TextStyle.Rectangle(f.p.Title.Text).Size().X; w > pc.Size().X {
			t.Errorf("%s: title is %v wide, the plot %v: clipped", f.name, w, pc.Size().X)
		}
		if lc.Min.X < data.Max.X {
			t.Errorf("%s: legend column starts at x=%v, inside the data area (ends at %v)", f.name, lc.Min.X, data.Max.X)
		}
		for _, l := range f.labels {
			if w := f.legend.ThumbnailWidth + f.legend.TextStyle.Rectangle(" "+l).Size().X; w > lc.Size().X {
				t.Errorf("%s: legend entry %q is %v wide, its column %v", f.name, l, w, lc.Size().X)
			}
		}
		for _, tk := range f.p.X.Tick.Marker.Ticks(f.p.X.Min, f.p.X.Max) {
			if strings.ContainsAny(tk.Label, "e+") {
				t.Errorf("%s: x tick label %q has an exponent", f.name, tk.Label)
			}
		}
		tx, ty := f.p.Transforms(&data)
		n := 0
		for _, pt := range r.Points {
			if pt.Experiment != f.exp || pt.Series != f.series && pt.Series != "reference" {
				continue
			}
			x, y := f.fx(pt), f.fy(pt)
			if pt.Series == "reference" {
				x = f.p.X.Max
			}
			if y > f.p.Y.Max || y < f.p.Y.Min {
				t.Errorf("%s: point y=%v outside the y axis [%v, %v]", f.name, y, f.p.Y.Min, f.p.Y.Max)
			}
			p := vg.Point{X: tx(x), Y: ty(y)}
			if !data.Contains(p) && !(math.Abs(float64(p.X-data.Max.X)) < 1e-6 && p.Y >= data.Min.Y && p.Y <= data.Max.Y) {
				t.Errorf("%s: point (%v, %v) drawn at %v, outside the data area %v", f.name, x, y, p, data.Rectangle)
			}
			n++
		}
		if n == 0 {
			t.Errorf("%s: no points checked", f.name)
		}
		if !inked(img, dc, lc) {
			t.Errorf("%s: nothing drawn in the legend column", f.name)
		}
	}
	stripe := figs[len(figs)-1]
	want := []string{Amalgam, ShardedPaxos + " (no stripes)", RSPaxos + " (no stripes)"}
	if stripe.name != "stripe.svg" || !slices.Equal(stripe.labels, want) {
		t.Fatalf("%s: legend %q, want %q", stripe.name, stripe.labels, want)
	}
}

// inked reports whether the image has a non-white pixel inside canvas
// rectangle r of the figure drawn on c (y grows upwards there, downwards
// in the image).
func inked(img image.Image, c draw.Canvas, r draw.Canvas) bool {
	b := img.Bounds()
	sx := float64(b.Dx()) / float64(c.Size().X)
	sy := float64(b.Dy()) / float64(c.Size().Y)
	x0, x1 := int(float64(r.Min.X)*sx), int(float64(r.Max.X)*sx)
	y0, y1 := b.Dy()-int(float64(r.Max.Y)*sy), b.Dy()-int(float64(r.Min.Y)*sy)
	for y := max(y0, 0); y < min(y1, b.Dy()); y++ {
		for x := max(x0, 0); x < min(x1, b.Dx()); x++ {
			if cr, cg, cb, _ := img.At(x, y).RGBA(); cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				return true
			}
		}
	}
	return false
}
