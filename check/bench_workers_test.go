package check

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tally is what alternated runs of one search variant added up to.
type tally struct {
	states    int
	wall, cpu time.Duration
}

// alternate runs each option set once per iteration, in turn, so that
// all see the same machine load; every run must exhaust two-clients.
func alternate(b *testing.B, opts ...mc.Options) []tally {
	out := make([]tally, len(opts))
	for i := 0; i < b.N; i++ {
		for k, o := range opts {
			c0 := cpuTime()
			r := TwoClients.Run(mc.BFS, o)
			out[k].cpu += cpuTime() - c0
			if r.Outcome != mc.Exhausted {
				b.Fatalf("%+v: %s: %s", o, r.Outcome, r.Explanation)
			}
			out[k].states += r.States
			out[k].wall += r.Elapsed
		}
	}
	return out
}

func (t tally) perWall() float64 { return float64(t.states) / t.wall.Seconds() }
func (t tally) perCPU() float64  { return float64(t.states) / t.cpu.Seconds() }

// BenchmarkBFSWorkers measures BFS of the two-client scenario to
// exhaustion with its invariants, for 1 and 2 workers alternated within
// each iteration: distinct states per wall-second and per CPU-second of
// each, and the ratio of the wall-second rates (2 workers over 1).
func BenchmarkBFSWorkers(b *testing.B) {
	t := alternate(b, mc.Options{Workers: 1}, mc.Options{Workers: 2})
	for w := 1; w <= 2; w++ {
		b.ReportMetric(t[w-1].perWall(), fmt.Sprintf("states/s-w%d", w))
		b.ReportMetric(t[w-1].perCPU(), fmt.Sprintf("states/cpu-s-w%d", w))
	}
	b.ReportMetric(t[1].perWall()/t[0].perWall(), "speedup")
}

// BenchmarkBFSSleepSets measures BFS of the two-client scenario without
// and with sleep sets (1 worker, alternated): states per CPU-second of
// each and the ratio (with over without).
func BenchmarkBFSSleepSets(b *testing.B) {
	t := alternate(b, mc.Options{}, mc.Options{SleepSets: true})
	b.ReportMetric(t[0].perCPU(), "states/cpu-s")
	b.ReportMetric(t[1].perCPU(), "states/cpu-s-sleep")
	b.ReportMetric(t[1].perCPU()/t[0].perCPU(), "ratio")
}
