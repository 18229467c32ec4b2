package mc

import (
	"fmt"
	"time"
)

// CompareLMC runs BFS (one worker), then LMC, for limit each and says how
// far each got: BFS's states and depth, LMC's local states, longest local
// path (per node) and longest execution its checks confirmed.
func (sc *Scenario) CompareLMC(limit time.Duration) string {
	g := sc.Run(BFS, Options{Workers: 1, MaxTime: limit})
	l, st := sc.RunLMC(Options{MaxTime: limit})
	return fmt.Sprintf("%s: bfs %s, %d states, depth %d; lmc %s, %d local states, longest local path %d (per node %v), longest checked execution %d",
		sc.Name, g.Outcome, g.States, g.MaxDepth, l.Outcome, l.States, l.MaxDepth, st.Depth, st.Longest)
}
