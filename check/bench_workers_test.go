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

// BenchmarkBFSWorkers measures BFS of the two-client scenario to
// exhaustion with its invariants, for 1 and 2 workers alternated within
// each iteration (so both see the same machine load): distinct states
// per wall-second and per CPU-second of each, and the ratio of the
// wall-second rates (2 workers over 1).
func BenchmarkBFSWorkers(b *testing.B) {
	var states [3]int
	var wall, cpu [3]time.Duration
	for i := 0; i < b.N; i++ {
		for _, w := range []int{1, 2} {
			c0 := cpuTime()
			r := TwoClients.Run(mc.BFS, mc.Options{Workers: w})
			cpu[w] += cpuTime() - c0
			if r.Outcome != mc.Exhausted {
				b.Fatalf("%d workers: %s: %s", w, r.Outcome, r.Explanation)
			}
			states[w] += r.States
			wall[w] += r.Elapsed
		}
	}
	for _, w := range []int{1, 2} {
		b.ReportMetric(float64(states[w])/wall[w].Seconds(), fmt.Sprintf("states/s-w%d", w))
		b.ReportMetric(float64(states[w])/cpu[w].Seconds(), fmt.Sprintf("states/cpu-s-w%d", w))
	}
	b.ReportMetric((float64(states[2])/wall[2].Seconds())/(float64(states[1])/wall[1].Seconds()), "speedup")
}

// BenchmarkBFSSleepSets measures BFS of the two-client scenario with and
// without sleep sets (1 worker, alternated within each iteration):
// states per CPU-second of each and the ratio (with over without).
func BenchmarkBFSSleepSets(b *testing.B) {
	var states [2]int
	var cpu [2]time.Duration
	for i := 0; i < b.N; i++ {
		for k, on := range []bool{false, true} {
			c0 := cpuTime()
			r := TwoClients.Run(mc.BFS, mc.Options{SleepSets: on})
			cpu[k] += cpuTime() - c0
			if r.Outcome != mc.Exhausted {
				b.Fatalf("sleep sets %v: %s: %s", on, r.Outcome, r.Explanation)
			}
			states[k] += r.States
		}
	}
	off, on := float64(states[0])/cpu[0].Seconds(), float64(states[1])/cpu[1].Seconds()
	b.ReportMetric(off, "states/cpu-s")
	b.ReportMetric(on, "states/cpu-s-sleep")
	b.ReportMetric(on/off, "ratio")
}
