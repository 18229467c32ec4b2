//go:build mutants

package baselines

import (
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/mc"
)

// TestRestartMutantsFound checks that the restart scenarios are not
// vacuous: with a persistence bug, the search TestScenarios runs
// (breadth-first up to DefaultStates states, then 3000 random walks)
// finds two values chosen for one slot, a chosen value not on disk at a
// quorum, or (a restarted leader keeping its ballot) a read that misses
// an acknowledged write.
func TestRestartMutantsFound(t *testing.T) {
	findsMutant(t, paxos.MutantUnsavedAccept, ShardedPaxosRestartWitness, ShardedPaxosRestartLeader, RSPaxosRestartLeader)
	findsMutant(t, paxos.MutantRestartLeads, ShardedPaxosRestartLeader)
	findsMutant(t, paxos.MutantSelfVoteAtOnce, ShardedPaxosRestartLeader, RSPaxosRestartLeader)
	findsMutantWith(t, paxos.MutantRestartKeepsBallot, "not linearizable", ShardedPaxosRestartLeader)
	findsMutantWith(t, paxos.MutantReplyAtPropose, "not linearizable", RSPaxosRestartLeader)
}

// findsMutant injects mutant and searches each scenario for it.
func findsMutant(t *testing.T, mutant string, scs ...*mc.Scenario) {
	findsMutantWith(t, mutant, "is chosen", scs...)
}

// findsMutantWith is findsMutant for a violation whose explanation has
// want in it.
func findsMutantWith(t *testing.T, mutant, want string, scs ...*mc.Scenario) {
	paxos.Mutant = mutant
	defer func() { paxos.Mutant = "" }()
	for _, sc := range scs {
		r := sc.Run(mc.BFS, mc.Options{Workers: 2, MaxStates: DefaultStates})
		if r.Outcome != mc.Violation {
			r = sc.Run(mc.Random, mc.Options{Workers: 2, Seed: 1, Walks: 3000, MaxDepth: 80})
		}
		if r.Outcome != mc.Violation || !strings.Contains(r.Explanation, want) {
			t.Errorf("%s in %s: search ended %s after %d states (%s: %s); want a violation saying %q",
				mutant, sc.Name, r.Outcome, r.States, r.Predicate, r.Explanation, want)
			continue
		}
		t.Logf("%s in %s: found after %d states, trace of %d steps: %s", mutant, sc.Name, r.States, len(r.Trace), r.Explanation)
	}
}
