package mc

import (
	"strings"
	"testing"
)

// TestExhaustive explores small scenarios to exhaustion and asserts the
// exact number of distinct states, the same from BFS with 1 and 2 workers
// and from DFS.
func TestExhaustive(t *testing.T) {
	cases := []struct {
		sc     *Scenario
		states int
	}{
		{Normal, 69},
		{Txn, 57},
		{Witnesses, 929},
		{NormalLossy, 7575},
		{SameShard, 6525},
	}
	for _, c := range cases {
		t.Run(c.sc.Name, func(t *testing.T) {
			for _, run := range []struct {
				st      Strategy
				workers int
			}{{BFS, 1}, {BFS, 2}, {DFS, 1}} {
				r := c.sc.Run(run.st, Options{Workers: run.workers})
				if r.Outcome != Exhausted {
					t.Fatalf("%s/%d workers: %s (%s: %s)", run.st, run.workers, r.Outcome, r.Predicate, r.Explanation)
				}
				if r.States != c.states {
					t.Fatalf("%s/%d workers: %d states, want exactly %d", run.st, run.workers, r.States, c.states)
				}
			}
		})
	}
}

// TestDepthBoundedDFSMatchesBFS: with a depth bound, DFS (re-expanding
// states reached at a smaller depth) finds exactly BFS's states.
func TestDepthBoundedDFSMatchesBFS(t *testing.T) {
	for _, d := range []int{3, 8, 15} {
		b := TwoClients.Run(BFS, Options{MaxDepth: d, Workers: 2})
		f := TwoClients.Run(DFS, Options{MaxDepth: d})
		if b.Outcome != Exhausted || f.Outcome != Exhausted || b.States != f.States {
			t.Fatalf("depth %d: bfs %s %d states, dfs %s %d states", d, b.Outcome, b.States, f.Outcome, f.States)
		}
	}
}

func TestRandomWalksDeterministic(t *testing.T) {
	a := NormalLossy.Run(Random, Options{Seed: 3, Walks: 50, MaxDepth: 60})
	b := NormalLossy.Run(Random, Options{Seed: 3, Walks: 50, MaxDepth: 60})
	if a.Outcome != WalksDone || a.States != b.States || a.States < 10 {
		t.Fatalf("random walks: %s %d states, then %d", a.Outcome, a.States, b.States)
	}
}

func TestSelfChecks(t *testing.T) {
	r := NormalLossy.Run(BFS, Options{Checks: Checks{Determinism: true, CloneHash: true, Idempotence: true}})
	if r.Outcome != Exhausted {
		t.Fatalf("%s: %s: %s", r.Outcome, r.Predicate, r.Explanation)
	}
	t.Logf("handlers not idempotent: %v", r.Idempotence)
}

func TestGoalAndPrune(t *testing.T) {
	o := Normal.Options(BFS)
	o.Goals = []Predicate{ClientsDonePred()}
	r := Search(Normal.Init(), o)
	if r.Outcome != GoalFound || r.Predicate != "all clients done" {
		t.Fatalf("goal: %s %s", r.Outcome, r.Predicate)
	}
	// Request, 2 PREPAREs, 2 PREPARE-OKs and the reply for each
	// operation; the second operation's PREPAREs queue behind the first's
	// COMMIT and PREPARE-DROP on both parity streams: 6 + 10.
	if len(r.Trace) != 16 {
		t.Fatalf("shortest trace to done has %d steps, want 16", len(r.Trace))
	}
	o.Goals = nil
	o.Prunes = []Predicate{RepliesAtLeast(1)}
	p := Search(Normal.Init(), o)
	if p.Outcome != Exhausted || p.States >= 69 {
		t.Fatalf("prune: %s %d states", p.Outcome, p.States)
	}
	g := Normal.Run(Guided, Options{})
	if g.Outcome != Exhausted || len(g.Trace) == 0 {
		t.Fatalf("guided: %s, trace %d", g.Outcome, len(g.Trace))
	}
}

func TestPredicateCombinators(t *testing.T) {
	yes := Pred("yes", func(*State) (bool, string) { return true, "y" })
	no := Pred("no", func(*State) (bool, string) { return false, "n" })
	s := Normal.Init()
	for _, c := range []struct {
		p    Predicate
		want bool
	}{
		{And(yes, yes), true}, {And(yes, no), false}, {Or(no, yes), true}, {Or(no, no), false},
		{Not(no), true}, {Not(yes), false}, {Implies(no, no), true}, {Implies(yes, no), false}, {Implies(yes, yes), true},
	} {
		if ok, why := c.p.Check(s); ok != c.want {
			t.Errorf("%s = %v (%s), want %v", c.p.Name, ok, why, c.want)
		}
	}
	if ok, why := And(yes, no).Check(s); ok || !strings.HasPrefix(why, "no:") {
		t.Errorf("And explanation %q", why)
	}
	if n := Implies(yes, no).Name; n != "(yes implies no)" {
		t.Errorf("name %q", n)
	}
}
