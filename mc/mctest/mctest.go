// Package mctest holds what a protocol's tests ask of the checker again
// and again: that a scenario's state space, explored to the end, has
// exactly the states it had before, and that a bug is found with a
// trace that reads as the protocol's own words.
package mctest

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// Long is -long, one flag for every package whose tests import mctest:
// it runs the explorations and sweeps too long for go test's default
// timeout, which each package's tests name.
var Long = flag.Bool("long", false, "also run the long explorations and sweeps (each package's tests say which)")

// NeedsLong skips t unless -long is set; took says how long t runs.
func NeedsLong(t testing.TB, took string) {
	t.Helper()
	if !*Long {
		t.Skip("-long: " + took)
	}
}

// run runs sc with o, breadth-first when o names no strategy.
func run(sc *mc.Scenario, o mc.Options) (*mc.Result, mc.Strategy) {
	if o.Strategy == "" {
		o.Strategy = mc.BFS
	}
	return sc.Run(o.Strategy, o), o.Strategy
}

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
		r, st := run(sc, o)
		if r.Outcome == mc.Exhausted && r.States == states {
			continue
		}
		why := ""
		if r.Predicate != "" {
			why = fmt.Sprintf(" (%s: %s)", r.Predicate, r.Explanation)
		}
		t.Errorf("%s%s, %s with %d workers: %s after %d states, want exhausted after exactly %d%s",
			sc.Name, skip, st, max(1, o.Workers), r.Outcome, r.States, states, why)
	}
}

// Violates runs sc with o (breadth-first when o names no strategy) and
// stops t unless the run finds a violation. It shortens the trace
// (mc.Explain), logs it as sc prints it, fails t for each of wants the
// printed trace lacks, and returns the printed trace.
func Violates(t testing.TB, sc *mc.Scenario, o mc.Options, wants ...string) string {
	t.Helper()
	r, _ := run(sc, o)
	if r.Outcome != mc.Violation {
		t.Fatalf("%s: bug not found: %s after %d states", sc.Name, r.Outcome, r.States)
	}
	mc.Explain(sc, r)
	var b strings.Builder
	sc.PrintTrace(&b, r.Trace)
	tr := b.String()
	t.Logf("%s: %s\n%s", r.Predicate, r.Explanation, tr)
	for _, w := range wants {
		if !strings.Contains(tr, w) {
			t.Errorf("trace lacks %q", w)
		}
	}
	return tr
}
