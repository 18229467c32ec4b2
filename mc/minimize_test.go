package mc_test

import (
	"testing"

	"github.com/amalgam-store/amalgam/examples/twophase"
	"github.com/amalgam-store/amalgam/mc"
)

// TestMinimizeCausalTwoPhase: random walks' counterexamples of the early
// commit shrink to a trace no longer than BFS's shortest that still
// violates the same invariant.
func TestMinimizeCausalTwoPhase(t *testing.T) {
	sc := twophase.Scenario(3, true)
	bfs := sc.Run(mc.BFS, mc.Options{})
	inv := sc.Options(mc.BFS).Invariants
	for seed := uint64(1); seed <= 3; seed++ {
		r := sc.Run(mc.Random, mc.Options{Seed: seed, Walks: 1000})
		if r.Outcome != mc.Violation {
			t.Fatalf("seed %d: %s", seed, r.Outcome)
		}
		m := mc.MinimizeCausal(sc.Init(), r.Trace, inv, r.Predicate)
		t.Logf("seed %d: %d steps, minimized %d, BFS %d, Minimize %d", seed, len(r.Trace), len(m), len(bfs.Trace), len(mc.Minimize(sc.Init(), r.Trace, inv, r.Predicate)))
		if len(m) > len(bfs.Trace) {
			t.Fatalf("seed %d: %d steps minimized to %d, BFS finds %d", seed, len(r.Trace), len(m), len(bfs.Trace))
		}
		rp, err := mc.Replay(sc, mc.NewTraceFile(sc, &mc.Result{Predicate: r.Predicate, Trace: m}))
		if err != nil || rp.Predicate != r.Predicate {
			t.Fatalf("seed %d: minimized trace: %v, reaches %q", seed, err, rp.Predicate)
		}
	}
}
