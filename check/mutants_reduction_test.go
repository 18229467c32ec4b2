//go:build mutants

package check

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// TestSkipNoOpsMutants: Settings.SkipNoOps leaves the violations found
// unchanged on every mutant the checker's searches find (the protocol
// mutants by BFS, the recovery mutants by random walks, the liveness
// mutants by random walks): each search, run with and without it, finds
// the same invariant, and the unmutated protocol none with it.
// Run with: go test -tags mutants -run TestSkipNoOpsMutants -v ./check/
func TestSkipNoOpsMutants(t *testing.T) {
	type run struct {
		name string
		sc   *mc.Scenario
		st   mc.Strategy
		seed uint64
	}
	var runs []run
	for _, m := range Mutants() {
		if m.Kind == "persistence" {
			continue
		}
		sc, err := Registry().Lookup(m.Scenario)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run{m.Name, sc, m.Strategy, m.Seed})
	}
	for _, c := range runs {
		t.Run(c.name, func(t *testing.T) {
			// The unmutated run exhausts the scenario (exhaustStates).
			clean := mc.Options{MaxStates: exhaustStates, Workers: 2, Seed: c.seed}
			opt := mc.Options{MaxStates: mutantBound(t, c.name), Workers: 2, Seed: c.seed}
			if c.st == mc.BFS {
				if r := reduced(c.sc).Run(c.st, clean); r.Outcome == mc.Violation {
					t.Fatalf("unmutated protocol violates %s with no-ops skipped: %s", r.Predicate, r.Explanation)
				}
			}
			if err := SetMutant(c.name); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = SetMutant("") }()
			full := c.sc.Run(c.st, opt)
			red := reduced(c.sc).Run(c.st, opt)
			if full.Outcome != mc.Violation || red.Outcome != mc.Violation {
				t.Fatalf("without: %s %q after %d states; with: %s %q after %d states",
					full.Outcome, full.Predicate, full.States, red.Outcome, red.Predicate, red.States)
			}
			if full.Predicate != red.Predicate {
				// Random walks take other paths with and without it, and a
				// path may break another invariant first: each invariant
				// found must then be found by both, searched alone.
				if c.st == mc.BFS {
					t.Fatalf("BFS finds %q without, %q with", full.Predicate, red.Predicate)
				}
				for _, p := range []string{full.Predicate, red.Predicate} {
					for _, sc := range []*mc.Scenario{only(c.sc, p), reduced(only(c.sc, p))} {
						if r := sc.Run(c.st, opt); r.Outcome != mc.Violation || r.Predicate != p {
							t.Fatalf("%q alone, no-ops skipped %v: %s %q after %d states", p, sc.Settings.SkipNoOps, r.Outcome, r.Predicate, r.States)
						}
					}
				}
			}
			t.Logf("%s (%s on %s): %q; %d states, trace %d, %v without; %d states, trace %d, %v with",
				c.name, c.st, c.sc.Name, full.Predicate, full.States, len(full.Trace), full.Elapsed.Round(time.Millisecond),
				red.States, len(red.Trace), red.Elapsed.Round(time.Millisecond))
		})
	}
}

// only is scenario sc checking the invariant named p alone.
func only(sc *mc.Scenario, p string) *mc.Scenario {
	o := *sc
	o.Invariants = func() []mc.Predicate {
		var out []mc.Predicate
		for _, q := range sc.Invariants() {
			if q.Name == p {
				out = append(out, q)
			}
		}
		return out
	}
	return &o
}
