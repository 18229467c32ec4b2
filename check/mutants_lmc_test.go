//go:build mutants

package check

import (
	"flag"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// TestLMCProtocolMutants runs local model checking (bounded by lmcBound
// local states) on every protocol mutant's scenario: it must find each
// with the mutant's invariant, and
// its trace must replay under global semantics to the same invariant.
// Run with: go test -tags mutants -run TestLMCProtocolMutants -v ./check/
func TestLMCProtocolMutants(t *testing.T) {
	for _, m := range mutantsOfKind(t, "protocol") {
		t.Run(m.Name, func(t *testing.T) {
			if r := lmcMutant(t, m.Name, m.sc); r.Outcome != mc.Violation || r.Predicate != m.Finds {
				t.Errorf("%s: lmc %s %q, want a violation of %q", m.Name, r.Outcome, r.Predicate, m.Finds)
			}
		})
	}
}

// lmcUnjudged: LMC's walks do not judge the invariants on their own
// states (mc.LMCOptions.WalkUnjudged).
var lmcUnjudged = flag.Bool("lmc-unjudged", false, "LMC mutants: find violations through combinations only")

// TestLMCRecoveryMutants runs LMC (bounded by lmcBound local states) on
// each recovery mutant's
// scenario: it must find a violation that replays (with -lmc-unjudged it
// only logs what combinations alone find). The invariant may be another
// than the one global search reports first (held-old-config breaks
// linearizability as well as parity consistency); the unmutated
// scenarios break none (TestExhaustive, the scenario tests).
// Run with: go test -tags mutants -run TestLMCRecoveryMutants -v ./check/
func TestLMCRecoveryMutants(t *testing.T) {
	for _, m := range mutantsOfKind(t, "recovery") {
		t.Run(m.Name, func(t *testing.T) {
			r := lmcMutant(t, m.Name, m.sc)
			if !*lmcUnjudged && r.Outcome != mc.Violation {
				t.Errorf("%s: lmc %s, want a violation (global search: %q)", m.Name, r.Outcome, m.Finds)
			}
		})
	}
}

// lmcMutant runs LMC on scenario sc with mutant name set, bounded by
// lmcBound local states, logs and returns the outcome, and replays a
// violation.
func lmcMutant(t *testing.T, name string, sc *mc.Scenario) *mc.Result {
	if err := SetMutant(name); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = SetMutant("") }()
	o := mc.LMCOptions{Settings: sc.Settings, MaxLocal: lmcBound(t, name), WalkUnjudged: *lmcUnjudged}
	if sc.Invariants != nil {
		o.Invariants = sc.Invariants()
	}
	r, st := mc.RunLMC(sc.Init(), o)
	t.Logf("%s on %s: %s %q after %d local states (causal bound %d, per node %v, longest path %d, confirmed %v), %d built, %d candidates, checks %d/%d, %d unchecked, %d dropped, %d unbuilt, %d walks (found by a walk's own execution: %v), %d violations not reported (no fresh replay), %v",
		name, sc.Name, r.Outcome, r.Predicate, r.States, st.Bound, st.Local, r.MaxDepth, st.Confirmed, st.Built, st.Candidates, st.Passed, st.Checks,
		st.Unchecked, st.Dropped, st.Unbuilt, st.Walks, st.ByWalk, st.Corrupt, r.Elapsed.Round(time.Millisecond))
	if r.Outcome != mc.Violation {
		return r
	}
	rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
	if err != nil || rp.Predicate != r.Predicate {
		t.Errorf("LMC's trace of %q does not replay: %v, fails %q", r.Predicate, err, rp.Predicate)
	}
	return r
}

// scenarioMutant is a mutant of the shared table with its scenario.
type scenarioMutant struct {
	Mutant
	sc *mc.Scenario
}

// mutantsOfKind lists the mutants of one kind with their scenarios.
func mutantsOfKind(t *testing.T, kind string) []scenarioMutant {
	var out []scenarioMutant
	for _, m := range Mutants() {
		if m.Kind != kind {
			continue
		}
		sc, err := Registry().Lookup(m.Scenario)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, scenarioMutant{m, sc})
	}
	return out
}
