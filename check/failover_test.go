package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"testing"
	"time"
)

// TestFailoverScenarios runs random walks of the failover scenarios
// (10 s each): distinct spares, the
// grace after a leader change or a resume, and healing within the bound
// hold in every state reached.
func TestFailoverScenarios(t *testing.T) {
	for _, sc := range []*mc.Scenario{FailoverOne, FailoverTwo} {
		t.Run(sc.Name, func(t *testing.T) {
			res := sc.Run(mc.Random, mc.Options{MaxTime: 10 * time.Second, Seed: 1})
			t.Logf("%s: %s, %d states, depth %d, %v", sc.Name, res.Outcome, res.States, res.MaxDepth, res.Elapsed)
			if res.Outcome == mc.Violation {
				t.Fatalf("%s: %s\n%s", res.Predicate, res.Explanation, traceText(res))
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
