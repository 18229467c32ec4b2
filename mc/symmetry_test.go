package mc_test

import (
	"testing"

	"github.com/amalgam-store/amalgam/examples/twophase"
	"github.com/amalgam-store/amalgam/mc"
)

// TestSymmetry: two-phase commit declares its RMs interchangeable; with
// Options.Symmetry the search counts one state per representative (RMs
// sorted by state), finds no violation in the correct protocol and
// finds the commit-early bug by the same invariant. BFS with 1 worker
// and DFS give the exact counts; with 2 workers the representative
// reached first may differ (sorting is not a canonical form when RMs tie),
// so only the bound is asserted.
func TestSymmetry(t *testing.T) {
	for _, c := range []struct {
		sc        *mc.Scenario
		full, sym int
	}{
		{twophase.Scenario(3, false), 5312, 1952},
		{twophase.StaterightScenario(3, false), 288, 94},
		{twophase.StaterightScenario(5, false), 8832, 508},
	} {
		if r := c.sc.Run(mc.BFS, mc.Options{}); r.Outcome != mc.Exhausted || r.States != c.full {
			t.Errorf("%s without symmetry: %s after %d states, want %d", c.sc.Name, r.Outcome, r.States, c.full)
		}
		for _, o := range []mc.Options{{Strategy: mc.BFS, Workers: 1}, {Strategy: mc.DFS}, {Strategy: mc.BFS, Workers: 2}} {
			o.Symmetry = true
			r := c.sc.Run(o.Strategy, o)
			exact := o.Workers != 2
			if r.Outcome != mc.Exhausted || exact && r.States != c.sym || r.States < c.sym/2 || r.States >= c.full {
				t.Errorf("%s with symmetry, %s, %d workers: %s after %d states, want %d", c.sc.Name, o.Strategy, o.Workers, r.Outcome, r.States, c.sym)
			}
		}
	}
	for _, sc := range []*mc.Scenario{twophase.Scenario(3, true), twophase.StaterightScenario(5, true)} {
		want := sc.Run(mc.BFS, mc.Options{})
		r := sc.Run(mc.BFS, mc.Options{Symmetry: true})
		if r.Outcome != mc.Violation || r.Predicate != want.Predicate || len(r.Trace) != len(want.Trace) {
			t.Errorf("%s: with symmetry %s %q (trace %d), without %s %q (trace %d)", sc.Name,
				r.Outcome, r.Predicate, len(r.Trace), want.Outcome, want.Predicate, len(want.Trace))
		}
	}
}
