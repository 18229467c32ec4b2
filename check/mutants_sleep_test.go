//go:build mutants

package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// TestSleepSetsMutants: with sleep sets (mc.Options.SleepSets), BFS finds
// every protocol mutant and every persistence mutant BFS finds, by the
// same invariant, with a trace that replays, and the unmutated protocol
// violates nothing on the same scenarios.
// Run with: go test -tags mutants -run TestSleepSetsMutants -v ./check/
func TestSleepSetsMutants(t *testing.T) {
	type run struct {
		name  string
		sc    *mc.Scenario
		finds string
	}
	var runs []run
	for _, m := range Mutants() {
		if (m.Kind != "protocol" && m.Kind != "persistence") || m.Strategy != mc.BFS {
			continue
		}
		sc, err := Registry().Lookup(m.Scenario)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run{m.Name, sc, m.Finds})
	}
	for _, c := range runs {
		t.Run(c.name, func(t *testing.T) {
			// The unmutated run exhausts the scenario (exhaustStates). The
			// mutant's searches are bounded by states (mutantBound).
			if r := c.sc.Run(mc.BFS, mc.Options{MaxStates: exhaustStates, Workers: 2, SleepSets: true}); r.Outcome == mc.Violation {
				t.Fatalf("unmutated protocol violates %s on %s with sleep sets: %s", r.Predicate, c.sc.Name, r.Explanation)
			}
			if err := SetMutant(c.name); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = SetMutant("") }()
			bound := mutantBound(t, c.name)
			full := c.sc.Run(mc.BFS, mc.Options{MaxStates: bound, Workers: 2})
			r := c.sc.Run(mc.BFS, mc.Options{MaxStates: bound, Workers: 2, SleepSets: true})
			if r.Outcome != mc.Violation || r.Predicate != c.finds || full.Predicate != c.finds {
				t.Fatalf("without sleep sets %s %q; with %s %q after %d states, want %q",
					full.Outcome, full.Predicate, r.Outcome, r.Predicate, r.States, c.finds)
			}
			t.Logf("%s on %s: %q; without sleep sets %d states, %d transitions, trace %d; with %d states, %d transitions, trace %d",
				c.name, c.sc.Name, r.Predicate, full.States, full.Transitions, len(full.Trace), r.States, r.Transitions, len(r.Trace))
			rp, err := mc.Replay(c.sc, mc.NewTraceFile(c.sc, r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Fatalf("replay: %v, predicate %q", err, rp.Predicate)
			}
		})
	}
}
