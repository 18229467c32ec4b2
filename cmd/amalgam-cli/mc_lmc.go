package main

import (
	"fmt"
	"io"

	"github.com/amalgam-store/amalgam/mc"
)

// printLMCStats reports what a local model checking run did (nil: not
// one).
func printLMCStats(w io.Writer, sc *mc.Scenario, st *mc.LMCStats) {
	if st == nil {
		return
	}
	addrs := sc.Init().Addrs()
	fmt.Fprintf(w, "lmc: %d transitions, %d edges, %d messages, %d system states built (%d not yet), %d candidates, checks %d run %d passed %d gave up (%d global states searched), %d candidates dropped, %d unchecked, %d local states pruned, %d kept unsure, longest execution checked %d events\n",
		st.Transitions, st.Edges, st.Messages, st.Built, st.Unbuilt, st.Candidates, st.Checks, st.Passed, st.Abandoned, st.Searched, st.Dropped, st.Unchecked, st.Pruned, st.Unsure, st.Longest)
	for i, a := range addrs {
		fmt.Fprintf(w, "  %s: %d local states, longest path %d events, %d events in an execution found\n", a, st.Local[i], st.Depth[i], st.Confirmed[i])
	}
	fmt.Fprintf(w, "  %d walks took %d events", st.Walks, st.WalkSteps)
	if st.ByWalk {
		fmt.Fprint(w, "; the violation is on a walk's own execution")
	}
	if st.Corrupt > 0 {
		fmt.Fprintf(w, "; %d violations not reported: their traces did not replay afresh (a handler changed memory a clone shares)", st.Corrupt)
	}
	fmt.Fprintln(w)
	if len(st.Unprojected) > 0 {
		fmt.Fprintf(w, "  invariants without a projection (every node read whole): %v\n", st.Unprojected)
	}
}
