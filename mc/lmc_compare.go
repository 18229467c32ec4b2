package mc

import (
	"fmt"
	"slices"
	"time"
)

// CompareLMC runs BFS (one worker, counting per-node events), then LMC,
// for limit each and says how far each got: BFS's states, depth and most
// events of one node on one path; LMC's local states, longest local path,
// most events of one node in an execution its checks found, and longest
// such execution.
func (sc *Scenario) CompareLMC(limit time.Duration) string {
	g := sc.Run(BFS, Options{Workers: 1, MaxTime: limit, NodeDepth: true})
	l, st := sc.RunLMC(Options{MaxTime: limit})
	return fmt.Sprintf("%s: bfs %s, %d states, depth %d, node depth %d; lmc %s in %v, causal bound %d, %d local states (%d unsure), longest local path %d (per node %v), node depth %d (per node %v), longest checked execution %d, %d walks (%d events)",
		sc.Name, g.Outcome, g.States, g.MaxDepth, g.NodeDepth, l.Outcome, l.Elapsed.Round(time.Second), st.Bound, l.States, st.Unsure, l.MaxDepth, st.Depth,
		slices.Max(st.Confirmed), st.Confirmed, st.Longest, st.Walks, st.WalkSteps)
}
