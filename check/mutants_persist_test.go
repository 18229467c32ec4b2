//go:build mutants

package check

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// TestPersistMutants: the search Mutants names (BFS of a restart scenario,
// or seeded random walks) finds each persistence mutant within 60 s, with
// a trace that replays. The unmutated protocol passes the same searches
// (TestRestartScenariosExhaustive; for random walks, 10 s of them here).
// Run with: go test -tags mutants -run TestPersistMutants -v ./check/
func TestPersistMutants(t *testing.T) {
	for _, m := range Mutants() {
		if m.Kind != "persistence" {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			sc, err := Registry().Lookup(m.Scenario)
			if err != nil {
				t.Fatal(err)
			}
			if m.Strategy == mc.Random {
				if r := sc.Run(m.Strategy, mc.Options{MaxTime: 10 * time.Second, Workers: 2, Seed: m.Seed}); r.Outcome == mc.Violation {
					t.Fatalf("unmutated protocol violates %s on %s: %s", r.Predicate, sc.Name, r.Explanation)
				}
			}
			if err := SetMutant(m.Name); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = SetMutant("") }()
			r := sc.Run(m.Strategy, mc.Options{MaxTime: 60 * time.Second, Workers: 2, Seed: m.Seed})
			if r.Outcome != mc.Violation {
				t.Fatalf("mutant not found on %s: %s after %d states, %v", sc.Name, r.Outcome, r.States, r.Elapsed)
			}
			if r.Predicate != m.Finds {
				t.Errorf("found by %q, expected %q", r.Predicate, m.Finds)
			}
			n := len(r.Trace)
			mc.Explain(sc, r)
			t.Logf("%s on %s: %q in %v, %d states, trace %d steps (%d before minimizing): %s", m.Name, sc.Name, r.Predicate,
				r.Elapsed.Round(time.Millisecond), r.States, len(r.Trace), n, r.Explanation)
			rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Fatalf("replay: %v, predicate %q", err, rp.Predicate)
			}
		})
	}
}
