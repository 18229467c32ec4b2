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
// recorded in docs/model-checking.md with why it misses the others).
// Run with: go test -tags mutants -run TestMutantsLMC -v ./check/
func TestMutantsLMC(t *testing.T) {
	for _, c := range mutantCases {
		t.Run(c.name, func(t *testing.T) {
			c.set(c.name)
			defer c.set("")
			sc := c.sc.MC()
			r, st := sc.RunLMC(mc.Options{MaxTime: 20 * time.Second})
			t.Logf("%s on %s: %s %q after %d local states, checks %d/%d, %v", c.name, sc.Name, r.Outcome, r.Predicate,
				r.States, st.Passed, st.Checks, r.Elapsed.Round(time.Millisecond))
			if r.Outcome != mc.Violation {
				return
			}
			rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Errorf("LMC's trace of %q does not replay: %v, fails %q", r.Predicate, err, rp.Predicate)
			}
		})
	}
}

// TestRecoveryMutantsLMC runs LMC (60 s) on each recovery mutant that has
// a scenario, with the same rule: what it reports replays.
// Run with: go test -tags mutants -run TestRecoveryMutantsLMC -v ./check/
func TestRecoveryMutantsLMC(t *testing.T) {
	for _, c := range recoveryMutants {
		if c.sc == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			c.set(c.name)
			defer c.set("")
			sc := c.sc.MC()
			r, st := sc.RunLMC(mc.Options{MaxTime: time.Minute})
			t.Logf("%s on %s: %s %q after %d local states, checks %d/%d, %d unchecked, %v", c.name, sc.Name, r.Outcome, r.Predicate,
				r.States, st.Passed, st.Checks, st.Unchecked, r.Elapsed.Round(time.Millisecond))
			if r.Outcome != mc.Violation {
				return
			}
			rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Errorf("LMC's trace of %q does not replay: %v, fails %q", r.Predicate, err, rp.Predicate)
			}
		})
	}
}
