package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// reduced is scenario sc with Settings.SkipNoOps.
func reduced(sc *mc.Scenario) *mc.Scenario {
	r := *sc
	r.Settings.SkipNoOps = true
	return &r
}

// TestSkipNoOpsCounts compares exhaustive BFS with and without
// Settings.SkipNoOps on small scenarios: neither finds a violation, the
// reduced graph is never larger, and the reduced counts are exact (1 and 2
// workers and DFS agree). Amalgam's handlers change state on almost every
// delivery; the no-ops are the lossy scenario's duplicates and retries.
func TestSkipNoOpsCounts(t *testing.T) {
	for _, c := range []struct {
		sc            *Scenario
		full, reduced int
	}{
		{Normal, 69, 69},
		{NormalLossy, 7575, 3394},
		{SameShard, 6525, 6525},
		{Witnesses, 929, 929},
		{Txn, 57, 57},
		{CrashParityWitness, 3663, 3663},
		{CrashParityNoWitness, 207, 207},
		{CrashDataTxn, 114, 114},
	} {
		full := c.sc.Run(mc.BFS, mc.Options{Workers: 2})
		if full.Outcome != mc.Exhausted || full.States != c.full {
			t.Errorf("%s: %s after %d states, want exhausted after %d", c.sc.Name, full.Outcome, full.States, c.full)
		}
		red := reduced(c.sc.MC())
		for _, o := range []struct {
			st mc.Strategy
			w  int
		}{{mc.BFS, 1}, {mc.BFS, 2}, {mc.DFS, 1}} {
			r := red.Run(o.st, mc.Options{Workers: o.w})
			if r.Outcome != mc.Exhausted || r.States != c.reduced {
				t.Errorf("%s reduced, %s with %d workers: %s after %d states, want exhausted after %d (%s)",
					c.sc.Name, o.st, o.w, r.Outcome, r.States, c.reduced, r.Explanation)
			}
		}
		t.Logf("%s: %d states, %d with no-op events skipped", c.sc.Name, full.States, c.reduced)
	}
}
