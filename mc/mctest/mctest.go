// Package mctest holds what a protocol's tests ask of the checker again
// and again: that a scenario's state space, explored to the end, has
// exactly the states it had before.
package mctest

import (
	"fmt"
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// Exhausts runs sc once for each of runs (their Strategy, Workers and
// bounds; breadth-first with 1 and then 2 workers when runs is empty)
// and fails t unless every run explores the whole state space and counts
// exactly states states. A count that moves means the model, the hashes
// or the engine's rules changed.
func Exhausts(t testing.TB, sc *mc.Scenario, states int, runs ...mc.Options) {
	t.Helper()
	if len(runs) == 0 {
		runs = []mc.Options{{Strategy: mc.BFS, Workers: 1}, {Strategy: mc.BFS, Workers: 2}}
	}
	skip := ""
	if sc.Settings.SkipNoOps {
		skip = " (no-ops skipped)"
	}
	for _, o := range runs {
		r := sc.Run(o.Strategy, o)
		if r.Outcome == mc.Exhausted && r.States == states {
			continue
		}
		why := ""
		if r.Predicate != "" {
			why = fmt.Sprintf(" (%s: %s)", r.Predicate, r.Explanation)
		}
		t.Errorf("%s%s, %s with %d workers: %s after %d states, want exhausted after exactly %d%s",
			sc.Name, skip, o.Strategy, max(1, o.Workers), r.Outcome, r.States, states, why)
	}
}
