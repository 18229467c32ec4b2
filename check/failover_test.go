package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"testing"
)

// TestFailoverScenarios runs 2000 seeded random walks of each failover
// scenario, 7500 under -long (about what 10 s of one worker did idle,
// when they were bounded by time; bounded by walks, a busy machine
// searches the same states): distinct spares, the grace after a leader
// change or a resume, and healing within the bound hold in every state
// reached. The 2000 walks find every liveness mutant the 7500 find.
func TestFailoverScenarios(t *testing.T) {
	for _, sc := range []*mc.Scenario{FailoverOne, FailoverTwo} {
		t.Run(sc.Name, func(t *testing.T) {
			res := sc.Run(mc.Random, mc.Options{Seed: 1, Walks: sweep(7500, 2000, 2000), Workers: 1})
			t.Logf("%s: %s, %d states, depth %d, %v", sc.Name, res.Outcome, res.States, res.MaxDepth, res.Elapsed)
			if res.Outcome != mc.WalksDone {
				t.Fatalf("%s: %s: %s\n%s", res.Outcome, res.Predicate, res.Explanation, traceText(res))
			}
		})
	}
}

func traceText(res *mc.Result) string {
	out := ""
	for _, e := range res.Trace {
		out += e.String() + "\n"
	}
	return out
}
