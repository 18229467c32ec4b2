package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// TestSleepSetsCounts: sleep sets (mc.Options.SleepSets) find exactly the
// states BFS finds without them, with 1 and 2 workers, with no violation,
// through no more transitions, in scenarios with losses, duplicates,
// crashes, restarts and a partition.
func TestSleepSetsCounts(t *testing.T) {
	for _, sc := range []*Scenario{Normal, NormalLossy, SameShard, Witnesses, Txn, TwoClients, TwoStripes,
		CrashParityWitness, CrashParityNoWitness, CrashDataTxn, CrashData,
		RestartData, RestartParity, RestartWitness, PartitionServer} {
		full := sc.Run(mc.BFS, mc.Options{Workers: 2})
		for _, w := range []int{1, 2} {
			r := sc.Run(mc.BFS, mc.Options{Workers: w, SleepSets: true})
			if full.Outcome != mc.Exhausted || r.Outcome != mc.Exhausted || r.States != full.States || r.Transitions > full.Transitions {
				t.Errorf("%s, %d workers: without sleep sets %s, %d states, %d transitions; with %s, %d states, %d transitions (%s)",
					sc.Name, w, full.Outcome, full.States, full.Transitions, r.Outcome, r.States, r.Transitions, r.Explanation)
			}
			t.Logf("%s, %d workers: %d states; %d transitions, %d with sleep sets", sc.Name, w, r.States, full.Transitions, r.Transitions)
		}
	}
}
