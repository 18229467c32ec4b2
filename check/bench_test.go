package check

import (
	"fmt"
	"github.com/amalgam-store/amalgam/mc"
	"testing"
)

// BenchmarkBFSTwoClients measures distinct states per second of mc.BFS on the
// two-client scenario (explored to exhaustion: 30522 states), with its
// full invariant library, for 1 and 2 workers.
func BenchmarkBFSTwoClients(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			states, secs := 0, 0.0
			for i := 0; i < b.N; i++ {
				r := TwoClients.Run(mc.BFS, mc.Options{Workers: w})
				if r.Outcome != mc.Exhausted {
					b.Fatalf("%s: %s", r.Outcome, r.Explanation)
				}
				states += r.States
				secs += r.Elapsed.Seconds()
			}
			b.ReportMetric(float64(states)/secs, "states/s")
		})
	}
}

// BenchmarkBFSTwoClientsNoInvariants is the same search without
// predicates: the cost of the state graph alone.
func BenchmarkBFSTwoClientsNoInvariants(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			states, secs := 0, 0.0
			for i := 0; i < b.N; i++ {
				r := mc.Search(TwoClients.Init(), mc.Options{Workers: w})
				states += r.States
				secs += r.Elapsed.Seconds()
			}
			b.ReportMetric(float64(states)/secs, "states/s")
		})
	}
}
