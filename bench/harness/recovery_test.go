package harness

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/wire"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestRecoveryReport checks buckets, phases, the rebuild rate, the text
// and the plots on a made-up timeline: 4 writes/s of 1000-byte blocks for
// 1 s, none while the machine is down, 2/s after.
func TestRecoveryReport(t *testing.T) {
	var ops []opRec
	for _, end := range []int{100, 300, 600, 900} { // before the kill at 1 s
		ops = append(ops, opRec{end: ms(end), lat: ms(10)})
	}
	ops = append(ops, opRec{end: ms(1500), lat: ms(1400), err: true}) // failed: counted apart
	for _, end := range []int{2100, 2600, 3100, 3600} {               // after the move at 2 s
		ops = append(ops, opRec{end: ms(end), lat: ms(end - 1000)})
	}
	ops = append(ops, opRec{end: ms(4000), lat: ms(5)}) // at the end: outside [0, total)
	r := &RecoveryReport{System: Amalgam, Durability: "durable", N: 6, G: 3, F: 2, BlockSize: 1000, HeldBytes: 3e6,
		Bucket: ms(500), Duration: 4 * time.Second,
		Events: []RecoveryEvent{{EventKill, 1}, {EventMoved, 2}, {EventReplaced, 2.5}, {EventHealthy, 3.5}}}
	r.finish(ops)

	wantOps := []int64{2, 2, 0, 0, 1, 1, 1, 1}
	if len(r.Buckets) != len(wantOps) {
		t.Fatalf("%d buckets, want %d", len(r.Buckets), len(wantOps))
	}
	for i, b := range r.Buckets {
		if b.Ops != wantOps[i] || b.StartS != 0.5*float64(i) || b.OpsPerSec != 2*float64(wantOps[i]) || b.MBPerSec != b.OpsPerSec*1000/1e6 {
			t.Errorf("bucket %d: %+v, want %d ops from %.1f s", i, b, wantOps[i], 0.5*float64(i))
		}
	}
	if r.Buckets[3].Errors != 1 || r.Errors != 1 {
		t.Errorf("errors: bucket 3 has %d, report %d; want 1 and 1", r.Buckets[3].Errors, r.Errors)
	}
	if r.Buckets[0].P99ms != 10 || r.Buckets[2].P99ms != 0 || r.Buckets[7].P99ms != 2600 {
		t.Errorf("p99: %v %v %v, want 10 0 2600", r.Buckets[0].P99ms, r.Buckets[2].P99ms, r.Buckets[7].P99ms)
	}

	want := []struct {
		name     string
		from, to float64
		ops      int64
		ratio    float64
	}{
		{"before kill", 0, 1, 4, 1},
		{"kill to moved to spare", 1, 2, 0, 0},
		{"moved to spare to replaced", 2, 2.5, 1, 0.5},
		{"replaced to healthy", 2.5, 3.5, 2, 0.5},
		{"healthy to end", 3.5, 4, 1, 0.5},
	}
	if len(r.Phases) != len(want) {
		t.Fatalf("phases %+v", r.Phases)
	}
	for i, w := range want {
		p := r.Phases[i]
		if p.Name != w.name || p.FromS != w.from || p.ToS != w.to || p.Ops != w.ops || math.Abs(p.Ratio-w.ratio) > 1e-9 {
			t.Errorf("phase %d: %+v, want %+v", i, p, w)
		}
	}
	if r.RebuildSeconds != 1 || r.RebuildMBPerSec != 3 {
		t.Errorf("rebuild %v s at %v MB/s, want 1 s at 3 MB/s", r.RebuildSeconds, r.RebuildMBPerSec)
	}

	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"rebuild: 3.0 MB in 1.00 s, 3.00 MB/s", "replaced to healthy", "kill", "healthy"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, b.String())
		}
	}
	dir := t.TempDir()
	files, err := r.Plot(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"recovery-1000B.svg", "recovery-1000B-p99.svg"} {
		svg, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("%v (wrote %v)", err, files)
		}
		if !bytes.Contains(svg, []byte("moved to spare")) {
			t.Errorf("%s does not label the events", f)
		}
	}
}

// TestRecoveryReportUnhealthy: a run that ends before the cluster is
// healthy has no rebuild rate and says so.
func TestRecoveryReportUnhealthy(t *testing.T) {
	r := &RecoveryReport{BlockSize: 4096, HeldBytes: 1 << 20, Bucket: time.Second, Duration: 3 * time.Second,
		Events: []RecoveryEvent{{EventKill, 1}, {EventMoved, 2}}}
	r.finish([]opRec{{end: ms(500), lat: ms(1)}})
	if r.RebuildSeconds != 0 || r.RebuildMBPerSec != 0 || len(r.Phases) != 3 || r.Phases[2].Name != "moved to spare to end" {
		t.Errorf("rebuild %v s, phases %+v", r.RebuildSeconds, r.Phases)
	}
	var b bytes.Buffer
	_ = r.WriteText(&b)
	if !strings.Contains(b.String(), "not healthy again by the end of the run") {
		t.Errorf("text:\n%s", b.String())
	}
}

func TestRecoveryHealthy(t *testing.T) {
	st := &wire.StatusResponse{ConfigNum: 2, Machines: make([]*wire.Machine, 2)}
	for range 4 {
		st.Nodes = append(st.Nodes, &wire.NodeStatus{ConfigNum: 2})
	}
	if ok, why := healthy(st); !ok {
		t.Errorf("all four servers in configuration 2: %s", why)
	}
	st.Nodes[1].DegradedBlocks = 3
	if ok, why := healthy(st); ok || !strings.Contains(why, "3 blocks to rebuild") {
		t.Errorf("a server rebuilding: %v %s", ok, why)
	}
	st.Nodes[1].DegradedBlocks = 0
	st.Nodes[2].ConfigNum = 1
	if ok, _ := healthy(st); ok {
		t.Error("a server behind the configuration counted healthy")
	}
	st.Nodes = st.Nodes[:3]
	st.Nodes[2].ConfigNum = 2
	if ok, _ := healthy(st); ok {
		t.Error("a missing server counted healthy")
	}
}

func TestRecoveryOptions(t *testing.T) {
	o := RecoveryOptions{BlockSize: 4096, MiBPerMachine: 1}
	o.defaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	l := o.layout()
	// 1 MiB per machine on 6 machines, 5 blocks of 4 KiB per stripe.
	if l.N != 6 || l.G != 3 || l.F != 2 || l.Stripes != 308 {
		t.Errorf("layout %+v, want n=6 g=3 f=2 and 308 stripes", l)
	}
	for _, bad := range []RecoveryOptions{{N: 4}, {KillAfter: time.Minute, Duration: time.Second}, {Victim: 6}, {Clients: -1}, {Bucket: -1}} {
		bad.defaults()
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
