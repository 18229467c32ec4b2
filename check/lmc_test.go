package check

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/mc/mctest"
)

// TestLMCDepth (-long) gives global BFS and LMC 60 s each on three
// recovery scenarios and prints how deep each got
// (mc.Scenario.CompareLMC); docs/model-checking.md records the numbers.
func TestLMCDepth(t *testing.T) {
	mctest.NeedsLong(t, "six minutes")
	for _, name := range []string{"replace-data", "replace-parity", "rebuilder-fails"} {
		sc, err := Registry().Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(sc.CompareLMC(time.Minute))
	}
}

// TestLMCReportsOnlyReplayable: whatever LMC reports on Amalgam's
// scenarios replays under global semantics to the same invariant's
// failure. LMC exhausts each of these few scenarios in under a second
// (33, 47 and 64 local states), so the runs have no time bound and must
// end exhausted or with a violation.
func TestLMCReportsOnlyReplayable(t *testing.T) {
	for _, name := range []string{"normal", "crash-parity", "witness"} {
		sc, err := Registry().Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := sc.RunLMC(mc.Options{})
		if r.Outcome == mc.Violation {
			rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Errorf("%s: LMC's trace of %q does not replay: %v, fails %q", name, r.Predicate, err, rp.Predicate)
			}
		} else if r.Outcome != mc.Exhausted {
			t.Errorf("%s: %s", name, r.Outcome)
		}
	}
}
