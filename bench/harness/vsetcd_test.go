package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/bench/loadgen"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

var etcdBench = e2etest.NewOptIn("etcd-bench", "run the vs-etcd smoke test (builds amalgam-server and the nested etcd module; needs its Go modules)")

func TestVsReportSummary(t *testing.T) {
	w := VsWorkloads[0]
	f := 2.0
	r := &VsReport{Rounds: 2, Systems: []string{Amalgam, "etcd3"}}
	for round, ops := range [][2]float64{{100, 200}, {300, 100}} {
		for i, sys := range r.Systems {
			p := VsPoint{Round: round + 1, System: sys, Workload: w.Name(), VsWorkload: w,
				Result: loadgen.Result{Ops: int64(ops[i]), OpsPerSec: ops[i]}}
			if sys != Amalgam {
				p.MetricSyncsPerOp = &f
			}
			r.Points = append(r.Points, p)
		}
	}
	r.summarise([]VsWorkload{w})
	if len(r.Summary) != 2 {
		t.Fatalf("summary has %d rows, want 2", len(r.Summary))
	}
	a, e := r.Summary[0], r.Summary[1]
	if a.Ratio != nil || a.MetricSyncsPerOp != nil || a.OpsPerSec.Median != 200 {
		t.Errorf("amalgam row %+v", a)
	}
	if e.Ratio == nil || e.Ratio.Min != 0.5 || e.Ratio.Max != 3 || e.Ratio.Median != 1.75 {
		t.Errorf("etcd ratio %+v, want median 1.75 of 0.5 and 3", e.Ratio)
	}
	if e.MetricSyncsPerOp == nil || e.MetricSyncsPerOp.Median != 2 || e.SyncCallsPerOp != nil {
		t.Errorf("etcd syncs %+v, %+v", e.MetricSyncsPerOp, e.SyncCallsPerOp)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), "1.75 (0.50-3.00)") {
		t.Errorf("text (%v):\n%s", err, b.String())
	}
	dir := t.TempDir()
	if _, err := r.Plot(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "vs-etcd.svg")); err != nil || fi.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
}

// With ShardedPaxos in the run, etcd's rows also get ShardedPaxos's
// per-round ratio, in a column of their own; Amalgam's ratio column
// covers ShardedPaxos too.
func TestVsReportShardedPaxos(t *testing.T) {
	w := VsWorkloads[1]
	r := &VsReport{Rounds: 2, Systems: []string{Amalgam, "etcd3", ShardedPaxos}}
	for round, ops := range [][3]float64{{100, 50, 200}, {300, 100, 100}} {
		for i, sys := range r.Systems {
			r.Points = append(r.Points, VsPoint{Round: round + 1, System: sys, Workload: w.Name(), VsWorkload: w,
				Result: loadgen.Result{Ops: int64(ops[i]), OpsPerSec: ops[i]}})
		}
	}
	r.summarise([]VsWorkload{w})
	if len(r.Summary) != 3 {
		t.Fatalf("summary has %d rows, want 3", len(r.Summary))
	}
	a, e, sp := r.Summary[0], r.Summary[1], r.Summary[2]
	if a.SPRatio != nil || sp.SPRatio != nil {
		t.Errorf("ShardedPaxos ratio on the amalgam (%+v) or shardedpaxos (%+v) row", a.SPRatio, sp.SPRatio)
	}
	if e.SPRatio == nil || e.SPRatio.Min != 1 || e.SPRatio.Max != 4 || e.SPRatio.Median != 2.5 {
		t.Errorf("etcd3's ShardedPaxos ratio %+v, want median 2.5 of 4 and 1", e.SPRatio)
	}
	if e.Ratio == nil || e.Ratio.Median != 2.5 || sp.Ratio == nil || sp.Ratio.Min != 0.5 || sp.Ratio.Max != 3 {
		t.Errorf("Amalgam's ratios: to etcd3 %+v, to shardedpaxos %+v", e.Ratio, sp.Ratio)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), "ShardedPaxos / system") ||
		!strings.Contains(b.String(), "2.50 (1.00-4.00)") {
		t.Errorf("text (%v):\n%s", err, b.String())
	}
	b.Reset()
	r.Markdown(&b)
	if head := strings.SplitN(b.String(), "\n", 2)[0]; strings.Count(head, "|") != len(vsColumns)+2 {
		t.Errorf("markdown header %q: want %d columns", head, len(vsColumns)+1)
	}
}

// vsPlan refuses unknown and repeated systems, skips RSPaxos's add
// workloads with the reason, and refuses RSPaxos when it would run none.
func TestVsPlan(t *testing.T) {
	wls := []VsWorkload{VsWorkloads[0], VsWorkloads[2], VsWorkloads[3]} // write-4KiB-1, add-4KiB-1, add-4KiB-32
	skipped, err := vsPlan([]string{Amalgam, RSPaxos, "etcd3", ShardedPaxos}, wls)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 2 || skipped[0].System != RSPaxos || skipped[0].Workload != "add-4KiB-1" ||
		skipped[1].Workload != "add-4KiB-32" || !strings.Contains(skipped[0].Reason, "not isolated") {
		t.Errorf("skipped %+v, want rspaxos's two add workloads with the reason", skipped)
	}
	for _, c := range []struct {
		systems []string
		wls     []VsWorkload
		want    string
	}{
		{[]string{RSPaxos, "etcd3"}, wls[1:], "rspaxos has no add"},
		{[]string{"rs-paxos"}, wls, `unknown system "rs-paxos"`},
		{[]string{"etcd0"}, wls, "unknown system"},
		{[]string{RSPaxos, "etcd3", RSPaxos}, wls[:1], "system rspaxos listed twice"},
	} {
		if _, err := vsPlan(c.systems, c.wls); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("vsPlan(%v): %v, want one line with %q", c.systems, err, c.want)
		}
	}
	if skipped, err := vsPlan([]string{Amalgam, "etcd5", ShardedPaxos}, wls); err != nil || len(skipped) != 0 {
		t.Errorf("without rspaxos: skipped %+v, %v; want every workload run", skipped, err)
	}
	for sys, want := range map[string]string{"etcd3": "etcd", "etcd5": "etcd", RSPaxos: "rspaxos", ShardedPaxos: "shardedpaxos", Amalgam: "amalgam"} {
		if got := vsLoadSystem(sys); got != want {
			t.Errorf("load --system for %s: %s, want %s", sys, got, want)
		}
	}
}

// With RSPaxos in the run, etcd's rows get its per-round ratio in a
// column after ShardedPaxos's; the add workloads it skipped have no
// RSPaxos row and are listed, with the reason, under the table.
func TestVsReportRSPaxos(t *testing.T) {
	wr, add := VsWorkloads[1], VsWorkloads[3]
	r := &VsReport{Rounds: 2, Systems: []string{Amalgam, ShardedPaxos, RSPaxos, "etcd3"},
		Skipped: []VsSkip{{System: RSPaxos, Workload: add.Name(), Reason: loadgen.Unsupported("rspaxos", loadgen.Add)}}}
	for round, ops := range [][4]float64{{400, 200, 100, 50}, {300, 200, 300, 100}} {
		for i, sys := range r.Systems {
			for _, w := range []VsWorkload{wr, add} {
				if sys == RSPaxos && w == add {
					continue
				}
				r.Points = append(r.Points, VsPoint{Round: round + 1, System: sys, Workload: w.Name(), VsWorkload: w,
					Result: loadgen.Result{Ops: int64(ops[i]), OpsPerSec: ops[i]}})
			}
		}
	}
	r.summarise([]VsWorkload{wr, add})
	if len(r.Summary) != 7 {
		t.Fatalf("summary has %d rows, want 4 for the write and 3 for the add", len(r.Summary))
	}
	for _, s := range r.Summary {
		etcd := s.System == "etcd3"
		if (s.RSRatio != nil) != (etcd && s.Workload == wr.Name()) || (s.SPRatio != nil) != etcd {
			t.Errorf("%s %s: RSPaxos ratio %+v, ShardedPaxos ratio %+v", s.Workload, s.System, s.RSRatio, s.SPRatio)
		}
		if s.System == RSPaxos && s.Workload == add.Name() {
			t.Errorf("a row for the skipped %s %s", s.System, s.Workload)
		}
	}
	if e := r.Summary[3]; e.System != "etcd3" || e.RSRatio == nil || e.RSRatio.Min != 2 || e.RSRatio.Max != 3 || e.RSRatio.Median != 2.5 {
		t.Errorf("etcd3's RSPaxos ratio %+v, want median 2.5 of 2 and 3", e.RSRatio)
	}
	var b strings.Builder
	r.Markdown(&b)
	lines := strings.Split(b.String(), "\n")
	if strings.Count(lines[0], "|") != len(vsColumns)+3 || !strings.Contains(lines[0], "RSPaxos / system") {
		t.Errorf("markdown header %q: want %d columns, RSPaxos's last", lines[0], len(vsColumns)+2)
	}
	if md := b.String(); !strings.Contains(md, "2.50 (2.00-3.00) |\n") || !strings.Contains(md, "\nnot run: rspaxos on add-4KiB-32 (rspaxos has no add") {
		t.Errorf("markdown:\n%s", b.String())
	}
	b.Reset()
	if err := r.WriteText(&b); err != nil || !strings.Contains(b.String(), "not run: rspaxos on add-4KiB-32 (rspaxos has no add") ||
		!strings.Contains(b.String(), "rspaxos: amalgam-server dev --protocol rspaxos") {
		t.Errorf("text (%v):\n%s", err, b.String())
	}
}

// TestVsEtcdSmoke starts the four systems as processes, loads them
// briefly and checks that every measure is there (RSPaxos skips the add).
// It checks no speed: every run measures until it has 5 operations,
// however long that takes.
func TestVsEtcdSmoke(t *testing.T) {
	etcdBench.Require(t)
	rep, err := VsEtcd(VsEtcdOptions{Rounds: 1, Warmup: 200 * time.Millisecond, Duration: 500 * time.Millisecond,
		Systems: []string{Amalgam, "etcd3", ShardedPaxos, RSPaxos}, Workloads: []string{"write-4KiB-1", "add-4KiB-1"}, Src: ".", MinOps: 5,
		Progress: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	onDevice := deviceStat(os.TempDir()) != "" // the systems' directories are there
	if len(rep.Points) != 7 || len(rep.Skipped) != 1 || rep.Skipped[0].System != RSPaxos {
		t.Fatalf("%d points, skipped %+v; want 7, and rspaxos's add skipped", len(rep.Points), rep.Skipped)
	}
	for _, p := range rep.Points {
		if p.Ops == 0 || p.Errors != 0 || p.CPUusPerOp <= 0 {
			t.Errorf("%s %s: %d ops, %d errors (%s), %.0f us CPU/op", p.System, p.Workload, p.Ops, p.Errors, p.FirstError, p.CPUusPerOp)
		}
		if (p.MetricSyncsPerOp != nil) != strings.HasPrefix(p.System, "etcd") {
			t.Errorf("%s: metric syncs/op %v", p.System, p.MetricSyncsPerOp)
		}
		if perfWorks() && (p.SyncCallsPerOp == nil || *p.SyncCallsPerOp <= 0) {
			t.Errorf("%s: sync calls/op %v", p.System, p.SyncCallsPerOp)
		}
		if onDevice && (p.DevicePerLogical == nil || *p.DevicePerLogical <= 0) {
			t.Errorf("%s: device bytes per logical byte %v", p.System, p.DevicePerLogical)
		}
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
}

// startDev reserves a port for the entry address and each machine of the
// system's deployment: RSPaxos's groups of 3f+1 = 7 members need 7
// machines, more than --machines 5.
func TestDevPorts(t *testing.T) {
	for sys, want := range map[string]int{Amalgam: 6, ShardedPaxos: 6, RSPaxos: 8} {
		got, err := devPorts(sys, 4096)
		if err != nil || got != want {
			t.Errorf("%s: %d ports (%v), want %d", sys, got, err, want)
		}
	}
}

// The text report describes the systems of the run, and only those.
func TestVsReportDescribesItsSystems(t *testing.T) {
	for _, systems := range [][]string{{RSPaxos, "etcd3"}, {Amalgam, ShardedPaxos, "etcd5"}} {
		var b strings.Builder
		if err := (&VsReport{Rounds: 1, Systems: systems}).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, sys := range []string{Amalgam, ShardedPaxos, RSPaxos} {
			if got, want := strings.Contains(out, sys+": amalgam-server dev"), slices.Contains(systems, sys); got != want {
				t.Errorf("systems %v: report describes %s: %v, want %v\n%s", systems, sys, got, want, out)
			}
		}
		if !strings.Contains(out, "etcdN: N stock etcd members") {
			t.Errorf("systems %v: etcd not described\n%s", systems, out)
		}
	}
}
