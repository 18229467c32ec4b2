package stateright

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// TestStaterightCount: 3 servers and 2 clients have exactly Stateright's
// 16,668 states, linearizable (BFS with 1 and 2 workers, DFS). The event
// rule that makes it, beside the model itself: no-op deliveries are no
// step (SkipNoOps); with them stepping, 301,099. The state keeps the
// order of every return, which Stateright's tester does not, but here it
// splits nothing: one value is decided, so only one client's put returns.
func TestStaterightCount(t *testing.T) {
	sc := Scenario(3, 2)
	for _, o := range []mc.Options{{Strategy: mc.BFS, Workers: 1}, {Strategy: mc.BFS, Workers: 2}, {Strategy: mc.DFS}} {
		if r := sc.Run(o.Strategy, o); r.Outcome != mc.Exhausted || r.States != 16668 {
			t.Errorf("%s, %d workers: %s after %d states, want exhausted after exactly 16668 (%s)", o.Strategy, o.Workers, r.Outcome, r.States, r.Explanation)
		}
	}
	sc.Settings.SkipNoOps = false
	if r := sc.Run(mc.BFS, mc.Options{Workers: 2}); r.Outcome != mc.Exhausted || r.States != 301099 {
		t.Errorf("no-ops stepping: %s after %d states, want exhausted after exactly 301099", r.Outcome, r.States)
	}
}
