package paxos

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// TestLMCDepth (-long) gives global BFS and LMC 60 s each on two-ballot
// Paxos and prints how deep each got: BFS's level (events on a global
// path), LMC's longest local path and the longest global execution its
// checks confirmed. docs/model-checking.md records the numbers; they are
// measurements, not assertions.
func TestLMCDepth(t *testing.T) {
	if !*long {
		t.Skip("-long: two minutes")
	}
	sc := ScenarioOf(TwoProposals())
	g := sc.Run(mc.BFS, mc.Options{Workers: 1, MaxTime: time.Minute})
	l, st := sc.RunLMC(mc.Options{MaxTime: time.Minute})
	t.Logf("%s: bfs %s, %d states, depth %d; lmc %s, %d local states, longest local path %d (per node %v), longest checked execution %d",
		sc.Name, g.Outcome, g.States, g.MaxDepth, l.Outcome, l.States, l.MaxDepth, st.Depth, st.Longest)
}
