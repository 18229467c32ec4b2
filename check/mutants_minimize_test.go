//go:build mutants

package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// TestMinimizeCausal: a random walk of two-clients finds wrong-coefficient
// with a 40-step trace (41 states; bounded here by 1,000). Removing one event at a time (Minimize) leaves 38:
// each event's message is delivered later, so no single event can go.
// Removing events with their consequences (MinimizeCausal) reaches the
// 9 steps of BFS's shortest counterexample. Both still violate.
func TestMinimizeCausal(t *testing.T) {
	if err := SetMutant("wrong-coefficient"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = SetMutant("") }()
	sc := TwoClients.MC()
	r := sc.Run(mc.Random, mc.Options{MaxStates: 1000, Seed: 1, Workers: 1})
	if r.Outcome != mc.Violation || r.Predicate != InvParity {
		t.Fatalf("random walks: %s %q", r.Outcome, r.Predicate)
	}
	inv := sc.Options(mc.BFS).Invariants
	single := mc.Minimize(sc.Init(), r.Trace, inv, r.Predicate)
	causal := mc.MinimizeCausal(sc.Init(), r.Trace, inv, r.Predicate)
	t.Logf("trace %d steps: Minimize %d, MinimizeCausal %d", len(r.Trace), len(single), len(causal))
	if len(causal) > 9 || len(causal) >= len(single) {
		t.Fatalf("MinimizeCausal left %d steps (Minimize %d, the walk %d), want at most 9", len(causal), len(single), len(r.Trace))
	}
	for _, tr := range [][]mc.Event{single, causal} {
		rp, err := mc.Replay(sc, mc.NewTraceFile(sc, &mc.Result{Predicate: r.Predicate, Trace: tr}))
		if err != nil || rp.Predicate != r.Predicate {
			t.Fatalf("minimized trace of %d steps: %v, reaches %q", len(tr), err, rp.Predicate)
		}
	}
}
