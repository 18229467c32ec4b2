package harness

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The events of a recovery run, in the order they happen.
const (
	EventKill     = "kill"           // one machine SIGKILLed
	EventMoved    = "moved to spare" // its slot moved to the spare (detected)
	EventReplaced = "replaced"       // its servers replaced: newest configuration not busy
	EventHealthy  = "healthy"        // every server in it, no block left to rebuild
)

// RecoveryEvent is one event, at seconds since the load started.
type RecoveryEvent struct {
	Name string  `json:"name"`
	AtS  float64 `json:"at_s"`
}

// RecoveryBucket is what completed in one time bucket.
type RecoveryBucket struct {
	StartS    float64 `json:"start_s"`
	Ops       int64   `json:"ops"`
	Errors    int64   `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MBPerSec  float64 `json:"mb_per_sec"`
	P99ms     float64 `json:"p99_ms"` // 0 when nothing completed
}

// RecoveryPhase is the load between two events.
type RecoveryPhase struct {
	Name      string  `json:"name"`
	FromS     float64 `json:"from_s"`
	ToS       float64 `json:"to_s"`
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MBPerSec  float64 `json:"mb_per_sec"`
	P99ms     float64 `json:"p99_ms"`
	// Ratio is OpsPerSec over the phase before the kill.
	Ratio float64 `json:"ratio_to_before"`
}

// opRec is one completed operation: when it completed (since the load
// started) and how long it took.
type opRec struct {
	end, lat time.Duration
	err      bool
}

// timeline collects completed operations from every client.
type timeline struct {
	mu  sync.Mutex
	t0  time.Time
	ops []opRec
}

func (t *timeline) add(start time.Time, err error) {
	now := time.Now()
	t.mu.Lock()
	t.ops = append(t.ops, opRec{end: now.Sub(t.t0), lat: now.Sub(start), err: err != nil})
	t.mu.Unlock()
}

func (t *timeline) snapshot() []opRec {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.ops)
}

// p99 of lats (sorted in place); 0 for none.
func p99(lats []time.Duration) float64 {
	if len(lats) == 0 {
		return 0
	}
	slices.Sort(lats)
	return float64(lats[min(len(lats)-1, int(0.99*float64(len(lats))))]) / 1e6
}

// bucketize splits [0, total) into buckets of width and counts the
// operations that completed without error in each; errors are counted
// apart and not in the throughput.
func bucketize(ops []opRec, width, total time.Duration, blockSize int) []RecoveryBucket {
	n := int((total + width - 1) / width)
	out := make([]RecoveryBucket, n)
	lats := make([][]time.Duration, n)
	for _, o := range ops {
		if o.end < 0 || o.end >= total {
			continue
		}
		i := int(o.end / width)
		if o.err {
			out[i].Errors++
			continue
		}
		out[i].Ops++
		lats[i] = append(lats[i], o.lat)
	}
	for i := range out {
		w := min(width, total-time.Duration(i)*width).Seconds()
		out[i].StartS = (time.Duration(i) * width).Seconds()
		out[i].OpsPerSec = float64(out[i].Ops) / w
		out[i].MBPerSec = out[i].OpsPerSec * float64(blockSize) / 1e6
		out[i].P99ms = p99(lats[i])
	}
	return out
}

// phases cuts [0, total) at the events that happened, in order: before
// the kill, each event to the next, and after the last.
func phases(ops []opRec, events []RecoveryEvent, total time.Duration, blockSize int) []RecoveryPhase {
	evs := slices.Clone(events)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].AtS < evs[j].AtS })
	type cut struct {
		name     string
		from, to float64
	}
	cuts := []cut{{"before " + EventKill, 0, total.Seconds()}}
	for i, e := range evs {
		cuts[i].to = e.AtS
		cuts = append(cuts, cut{e.Name + " to end", e.AtS, total.Seconds()})
		if i > 0 {
			cuts[i].name = evs[i-1].Name + " to " + e.Name
		}
	}
	var out []RecoveryPhase
	for _, c := range cuts {
		p := RecoveryPhase{Name: c.name, FromS: c.from, ToS: c.to}
		var lats []time.Duration
		for _, o := range ops {
			if s := o.end.Seconds(); !o.err && s >= c.from && s < c.to {
				p.Ops++
				lats = append(lats, o.lat)
			}
		}
		if d := c.to - c.from; d > 0 {
			p.OpsPerSec = float64(p.Ops) / d
			p.MBPerSec = p.OpsPerSec * float64(blockSize) / 1e6
		}
		p.P99ms = p99(lats)
		out = append(out, p)
	}
	if len(out) > 0 && out[0].OpsPerSec > 0 {
		for i := range out {
			out[i].Ratio = out[i].OpsPerSec / out[0].OpsPerSec
		}
	}
	return out
}

// RecoveryReport is the result of amalgam-bench recovery.
type RecoveryReport struct {
	Host
	System     string `json:"system"`
	Durability string `json:"durability"`
	N          int    `json:"n"`
	G          int    `json:"g"`
	F          int    `json:"f"`
	Stripes    int    `json:"stripes"`
	Blocks     uint64 `json:"blocks"`
	BlockSize  int    `json:"block_size"`
	// HeldBytes is what one machine holds (data and parity blocks): what
	// the replacement rebuilds.
	HeldBytes    int64            `json:"held_bytes_per_machine"`
	Clients      int              `json:"clients"`
	Victim       int              `json:"victim"`
	RebuildRate  string           `json:"rebuild_rate"`
	SuspectAfter time.Duration    `json:"suspect_after_ns"`
	Bucket       time.Duration    `json:"bucket_ns"`
	Duration     time.Duration    `json:"duration_ns"`
	FillSeconds  float64          `json:"fill_seconds"`
	FillMBPerSec float64          `json:"fill_mb_per_sec"`
	Events       []RecoveryEvent  `json:"events"`
	Phases       []RecoveryPhase  `json:"phases"`
	Buckets      []RecoveryBucket `json:"buckets"`
	// RebuildSeconds is from replaced to healthy, and RebuildMBPerSec
	// HeldBytes over it (0 if the run ended before healthy).
	RebuildSeconds  float64 `json:"rebuild_seconds"`
	RebuildMBPerSec float64 `json:"rebuild_mb_per_sec"`
	Errors          int64   `json:"errors"`
	FirstError      string  `json:"first_error,omitempty"`
}

// Event returns the time of the named event, if it happened.
func (r *RecoveryReport) Event(name string) (float64, bool) {
	for _, e := range r.Events {
		if e.Name == name {
			return e.AtS, true
		}
	}
	return 0, false
}

// finish fills the buckets, phases and rebuild rate from ops.
func (r *RecoveryReport) finish(ops []opRec) {
	r.Buckets = bucketize(ops, r.Bucket, r.Duration, r.BlockSize)
	r.Phases = phases(ops, r.Events, r.Duration, r.BlockSize)
	for _, o := range ops {
		if o.err && o.end < r.Duration {
			r.Errors++
		}
	}
	rep, ok1 := r.Event(EventReplaced)
	h, ok2 := r.Event(EventHealthy)
	if ok1 && ok2 && h > rep {
		r.RebuildSeconds = h - rep
		r.RebuildMBPerSec = float64(r.HeldBytes) / 1e6 / r.RebuildSeconds
	}
}

// WriteText prints the events, the phases and the buckets.
func (r *RecoveryReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s (%s), n=%d g=%d f=%d, %d stripes of %s blocks, %.1f MiB per machine; %d clients writing whole blocks; machine %d killed\n",
		r.System, r.Durability, r.N, r.G, r.F, r.Stripes, sizeLabel(r.BlockSize), float64(r.HeldBytes)/(1<<20), r.Clients, r.Victim)
	fmt.Fprintf(w, "fill: %d blocks in %.1f s (%.2f MB/s); load average %s before, %s after; %d cores\n\n",
		r.Blocks, r.FillSeconds, r.FillMBPerSec, r.LoadBefore, r.LoadAfter, r.Cores)
	fmt.Fprintln(w, "events (seconds since the load started):")
	last := 0.0
	for _, e := range r.Events {
		fmt.Fprintf(w, "  %-15s %7.2f s  (+%.2f s)\n", e.Name, e.AtS, e.AtS-last)
		last = e.AtS
	}
	if _, ok := r.Event(EventHealthy); !ok {
		fmt.Fprintf(w, "  not healthy again by the end of the run (%.0f s)\n", r.Duration.Seconds())
	}
	if r.RebuildSeconds > 0 {
		fmt.Fprintf(w, "  rebuild: %.1f MB in %.2f s, %.2f MB/s\n", float64(r.HeldBytes)/1e6, r.RebuildSeconds, r.RebuildMBPerSec)
	}
	fmt.Fprintf(w, "\n%-30s %8s %8s %9s %8s %8s %8s\n", "phase", "from s", "to s", "ops/s", "MB/s", "p99 ms", "x before")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "%-30s %8.2f %8.2f %9.1f %8.2f %8.1f %8.2f\n", p.Name, p.FromS, p.ToS, p.OpsPerSec, p.MBPerSec, p.P99ms, p.Ratio)
	}
	if r.Errors > 0 {
		fmt.Fprintf(w, "\n%d operations failed; the first: %s\n", r.Errors, r.FirstError)
	}
	fmt.Fprintf(w, "\n%8s %8s %9s %8s %8s  event\n", "t s", "ops", "ops/s", "MB/s", "p99 ms")
	for i, b := range r.Buckets {
		var marks []string
		for _, e := range r.Events {
			if e.AtS >= b.StartS && (i+1 == len(r.Buckets) || e.AtS < r.Buckets[i+1].StartS) {
				marks = append(marks, e.Name)
			}
		}
		fmt.Fprintf(w, "%8.2f %8d %9.1f %8.2f %8.1f  %s\n", b.StartS, b.Ops, b.OpsPerSec, b.MBPerSec, b.P99ms, strings.Join(marks, ", "))
	}
	return nil
}
