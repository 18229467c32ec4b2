package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/reconfig"
)

// TestReplaceDataTxn: 200 seeded random walks of replace-data-txn reach the
// replacement done with both clients finished, and 7500 (30000 under
// -long, about what 5 s of one worker did idle) find no violation.
func TestReplaceDataTxn(t *testing.T) {
	reachesAll(t, ReplaceDataTxn.MC(), mc.Pred("data/0 replaced, clients done", func(s *mc.State) (bool, string) {
		return s.Node(msg.ReconfigAddr).(*reconfig.Service).Config().Num == 1 && mc.ClientsDone(s), ""
	}))
	noViolationByWalks(t, ReplaceDataTxn.MC(), sweep(30000, 7500, 7500))
}

// TestRecoveryPlans: the guided plan of replace-data reaches an
// operation pending, the replacement under way and a block being rebuilt
// in turn, and its last phase searches from there (bounded here by
// 20,000 states) without a violation.
func TestRecoveryPlans(t *testing.T) {
	sc := ReplaceData.MC()
	phases := sc.Phases()
	if len(phases) != 4 {
		t.Fatalf("%d phases", len(phases))
	}
	phases[3].MaxStates = 20000
	r := mc.RunGuided(sc.Init(), phases, mc.Options{Workers: 1})
	if r.Outcome != mc.StateLimit || len(r.Trace) < 3 {
		t.Fatalf("guided: %s after %d steps (%s: %s)", r.Outcome, len(r.Trace), r.Predicate, r.Explanation)
	}
}
