package paxos

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc/mctest"
)

// TestLMCDepth (-long) gives global BFS and LMC 60 s each on two-proposal
// Paxos, with two ballots per server and with proposers retrying up to
// eight ballots, and prints how deep each got (mc.Scenario.CompareLMC).
// docs/model-checking.md records the numbers; they are measurements, not
// assertions.
func TestLMCDepth(t *testing.T) {
	mctest.NeedsLong(t, "four minutes")
	for _, c := range []Config{TwoProposals(), TwoProposalsRetrying(8)} {
		t.Log(ScenarioOf(c).CompareLMC(time.Minute))
	}
}
