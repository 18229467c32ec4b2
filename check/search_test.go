package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/mc/mctest"
)

// TestExhaustive explores the small scenarios and the crash scenarios to
// exhaustion and asserts the exact number of distinct states, the same
// from mc.BFS with 1 and 2 workers and from mc.DFS. The big one runs
// mc.BFS with 2 workers only, unless -long.
func TestExhaustive(t *testing.T) {
	cases := []struct {
		sc     *Scenario
		states int
		big    bool
	}{
		{Normal, 69, false},
		{Txn, 57, false},
		{Backlog, 6435, false},
		{Witnesses, 929, false},
		{NormalLossy, 7575, false},
		{SameShard, 6525, false},
		{CrashParityWitness, 3663, false},
		{CrashParityNoWitness, 207, false},
		{CrashData, 16884, false},
		{CrashDataTxn, 114, false},
		{CrashBackupWitness, 852219, true},
	}
	for _, c := range cases {
		t.Run(c.sc.Name, func(t *testing.T) {
			runs := threeWays
			if c.big && !*mctest.Long {
				runs = runs[1:2]
			}
			mctest.Exhausts(t, c.sc.MC(), c.states, runs...)
		})
	}
}

// threeWays searches with mc.BFS on 1 and 2 workers and with mc.DFS.
var threeWays = []mc.Options{{Strategy: mc.BFS, Workers: 1}, {Strategy: mc.BFS, Workers: 2}, {Strategy: mc.DFS}}

// TestDepthBoundedDFSMatchesBFS: with a depth bound, mc.DFS (re-expanding
// states reached at a smaller depth) finds exactly mc.BFS's states.
func TestDepthBoundedDFSMatchesBFS(t *testing.T) {
	for _, d := range []int{3, 8, 15} {
		b := TwoClients.Run(mc.BFS, mc.Options{MaxDepth: d, Workers: 2})
		if b.Outcome != mc.Exhausted {
			t.Fatalf("depth %d: bfs %s", d, b.Outcome)
		}
		mctest.Exhausts(t, TwoClients.MC(), b.States, mc.Options{Strategy: mc.DFS, MaxDepth: d})
	}
}

func TestRandomWalksDeterministic(t *testing.T) {
	a := NormalLossy.Run(mc.Random, mc.Options{Seed: 3, Walks: 50, MaxDepth: 60})
	b := NormalLossy.Run(mc.Random, mc.Options{Seed: 3, Walks: 50, MaxDepth: 60})
	if a.Outcome != mc.WalksDone || a.States != b.States || a.States < 10 {
		t.Fatalf("random walks: %s %d states, then %d", a.Outcome, a.States, b.States)
	}
}

func TestSelfChecks(t *testing.T) {
	r := NormalLossy.Run(mc.BFS, mc.Options{Checks: mc.Checks{Determinism: true, CloneHash: true, Idempotence: true}})
	if r.Outcome != mc.Exhausted {
		t.Fatalf("%s: %s: %s", r.Outcome, r.Predicate, r.Explanation)
	}
	t.Logf("handlers not idempotent: %v", r.Idempotence)
}

func TestGoalAndPrune(t *testing.T) {
	o := Normal.Options(mc.BFS)
	o.Goals = []mc.Predicate{mc.ClientsDonePred()}
	r := mc.Search(Normal.Init(), o)
	if r.Outcome != mc.GoalFound || r.Predicate != "all clients done" {
		t.Fatalf("goal: %s %s", r.Outcome, r.Predicate)
	}
	// Request, 2 PREPAREs, 2 PREPARE-OKs and the reply for each
	// operation; the second operation's PREPAREs queue behind the first's
	// COMMIT and PREPARE-DROP on both parity streams: 6 + 10.
	if len(r.Trace) != 16 {
		t.Fatalf("shortest trace to done has %d steps, want 16", len(r.Trace))
	}
	o.Goals = nil
	o.Prunes = []mc.Predicate{mc.RepliesAtLeast(1)}
	p := mc.Search(Normal.Init(), o)
	if p.Outcome != mc.Exhausted || p.States >= 69 {
		t.Fatalf("prune: %s %d states", p.Outcome, p.States)
	}
	g := Normal.Run(mc.Guided, mc.Options{})
	if g.Outcome != mc.Exhausted || len(g.Trace) == 0 {
		t.Fatalf("guided: %s, trace %d", g.Outcome, len(g.Trace))
	}
}
