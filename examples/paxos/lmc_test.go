package paxos

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc/mctest"
)

// TestLMCDepth (-long) gives global BFS and LMC 60 s each on two-ballot
// Paxos and prints how deep each got (mc.Scenario.CompareLMC).
// docs/model-checking.md records the numbers; they are measurements, not
// assertions.
func TestLMCDepth(t *testing.T) {
	mctest.NeedsLong(t, "two minutes")
	t.Log(ScenarioOf(TwoProposals()).CompareLMC(time.Minute))
}
