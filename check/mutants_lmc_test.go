//go:build mutants

package check

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// TestMutantsLMC runs local model checking (20 s) on every protocol
// mutant's scenario. A violation it reports must replay under global
// semantics to the same invariant; which mutants it finds is logged (and
// recorded in docs/model-checking.md with what is known of the misses).
// Run with: go test -tags mutants -run TestMutantsLMC -v ./check/
func TestMutantsLMC(t *testing.T) {
	for _, c := range mutantCases {
		t.Run(c.name, func(t *testing.T) { lmcMutant(t, c.name, c.set, c.sc, 20*time.Second) })
	}
}

// TestRecoveryMutantsLMC runs LMC (60 s) on each recovery mutant that has
// a scenario, with the same rule: what it reports replays.
// Run with: go test -tags mutants -run TestRecoveryMutantsLMC -v ./check/
func TestRecoveryMutantsLMC(t *testing.T) {
	for _, c := range recoveryMutants {
		if c.sc != nil {
			t.Run(c.name, func(t *testing.T) { lmcMutant(t, c.name, c.set, c.sc, time.Minute) })
		}
	}
}

// lmcMutant runs LMC on scenario asc with mutant name set, logs the
// outcome and replays a violation.
func lmcMutant(t *testing.T, name string, set func(string), asc *Scenario, limit time.Duration) {
	set(name)
	defer set("")
	sc := asc.MC()
	r, st := sc.RunLMC(mc.Options{MaxTime: limit})
	t.Logf("%s on %s: %s %q after %d local states, checks %d/%d, %d unchecked, %v", name, sc.Name, r.Outcome, r.Predicate,
		r.States, st.Passed, st.Checks, st.Unchecked, r.Elapsed.Round(time.Millisecond))
	if r.Outcome != mc.Violation {
		return
	}
	rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
	if err != nil || rp.Predicate != r.Predicate {
		t.Errorf("LMC's trace of %q does not replay: %v, fails %q", r.Predicate, err, rp.Predicate)
	}
}
