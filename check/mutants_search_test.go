//go:build mutants

package check

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// searchMutants runs, for each mutant of kind, the search Mutants names
// (with workers, bounded by 60 s): it must find the expected invariant,
// with a trace that replays. clean, if positive, first runs the same
// search unmutated for that long, once per scenario: it must find nothing.
func searchMutants(t *testing.T, kind string, workers int, clean func(Mutant) time.Duration) {
	cleaned := map[string]bool{}
	for _, m := range Mutants() {
		if m.Kind != kind {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			sc, err := Registry().Lookup(m.Scenario)
			if err != nil {
				t.Fatal(err)
			}
			if d := clean(m); d > 0 && !cleaned[m.Scenario] {
				cleaned[m.Scenario] = true
				if r := sc.Run(m.Strategy, mc.Options{MaxTime: d, Workers: workers, Seed: m.Seed}); r.Outcome == mc.Violation {
					t.Fatalf("unmutated protocol violates %s on %s: %s", r.Predicate, sc.Name, r.Explanation)
				}
			}
			if err := SetMutant(m.Name); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = SetMutant("") }()
			r := sc.Run(m.Strategy, mc.Options{MaxTime: 60 * time.Second, Workers: workers, Seed: m.Seed})
			if r.Outcome != mc.Violation || r.Predicate != m.Finds {
				t.Fatalf("mutant not found on %s: %s (%q, expected %q) after %d states, %v", sc.Name, r.Outcome, r.Predicate, m.Finds,
					r.States, r.Elapsed)
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
