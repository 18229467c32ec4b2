package check

import (
	"fmt"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/mc/mctest"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/witness"
	"github.com/amalgam-store/amalgam/workload"
)

// TestRestartScenariosExhaustive explores the restart scenarios to
// exhaustion (BFS with 1 and 2 workers, DFS; the two largest with BFS
// and 2 workers only, unless -long): no violation, exact counts. The
// early variants (scenario_early.go) add the crashes right after data/0
// handled up to 4 PREPARE-OKs, their replies sent before the commit was
// durable (node.EarlySends).
func TestRestartScenariosExhaustive(t *testing.T) {
	for _, c := range []struct {
		sc     *Scenario
		states int
	}{{RestartData, 216}, {RestartParity, 207}, {RestartWitness, 3747}, {RestartDataRetry, 1103}, {RestartDataTwo, 9669},
		{RestartDataEarly, 484}, {RestartDataRetryEarly, 2485}, {RestartDataTwoEarly, 20115}, {RestartDataTxnEarly, 367}} {
		for _, o := range []struct {
			st mc.Strategy
			w  int
		}{{mc.BFS, 2}, {mc.BFS, 1}, {mc.DFS, 1}} {
			if c.states > 5000 && o.w == 1 && !*mctest.Long {
				continue
			}
			r := c.sc.Run(o.st, mc.Options{Workers: o.w})
			if r.Outcome != mc.Exhausted || r.States != c.states {
				t.Errorf("%s, %s with %d workers: %s after %d states, want exhausted after %d (%s: %s)",
					c.sc.Name, o.st, o.w, r.Outcome, r.States, c.states, r.Predicate, r.Explanation)
			}
		}
	}
}

// restarted holds once the server at a crashed, restarted from what it
// persisted and is running, and has what has says it has.
func restarted(a node.Addr, what string, has func(node.Node) bool) mc.Predicate {
	return mc.Pred(fmt.Sprintf("%s restarted with %s", a, what), func(s *mc.State) (bool, string) {
		return s.Used().Restarts == 1 && !s.Crashed(a) && has(s.Node(a)), ""
	})
}

func clientDone(s *mc.State) bool {
	c := s.Node(msg.ClientAddr(0)).(*workload.Client)
	return len(c.Replies()) == len(c.Script())
}

// TestRestartScenariosReach shows each restart scenario reaches what it
// is about: the server restarts in the middle of a commit (the data
// server with its operation pending, a backup holding a PREPARE) and the
// client still gets both replies after it; and the restart racing a
// replacement is searched without a violation.
func TestRestartScenariosReach(t *testing.T) {
	for _, c := range []struct {
		sc   *Scenario
		goal mc.Predicate
	}{
		{RestartData, restarted(msg.DataAddr(0), "an operation pending", func(n node.Node) bool { return n.(*data.Server).PendingOps() > 0 })},
		{RestartParity, restarted(msg.ParityAddr(3), "a PREPARE held", func(n node.Node) bool { return len(n.(*parity.Server).Prepares()) > 0 })},
		{RestartWitness, restarted(msg.WitnessAddr(5), "a PREPARE held", func(n node.Node) bool { return len(n.(*witness.Server).Prepares()) > 0 })},
	} {
		m := c.sc.MC()
		o := m.Options(mc.BFS)
		o.Goals = []mc.Predicate{c.goal}
		r := mc.Search(m.Init(), o)
		if r.Outcome != mc.GoalFound {
			t.Fatalf("%s: %q not reached: %s", c.sc.Name, c.goal.Name, r.Outcome)
		}
		// From there, the client finishes.
		o.Goals = []mc.Predicate{mc.Pred("client/0 done", func(s *mc.State) (bool, string) { return clientDone(s), "" })}
		if r2 := mc.Search(r.Final, o); r2.Outcome != mc.GoalFound {
			t.Errorf("%s: client/0 never finishes after %q: %s", c.sc.Name, c.goal.Name, r2.Outcome)
		}
		t.Logf("%s: %q after %d steps", c.sc.Name, c.goal.Name, len(r.Trace))
	}

	// The no-violation walks below: n under -long (as many as 10 s, the
	// last 20 s, of one worker did on an idle machine when they were
	// bounded by time), a quarter of that by default (they still find
	// the persistence mutants of these scenarios), an eighth with -short.
	walks := func(n int) int { return sweep(n, n/4, n/8) }
	// The witness restarting while data/0 is replaced: no violation.
	noViolationByWalks(t, RestartWitnessReplaceData.MC(), walks(15000))

	// A parity server restarting while data/0 is replaced: the walks
	// reach a restart during the replacement's rebuild, and no violation.
	p := RestartParityReplaceData.MC()
	midRebuild := mc.Pred("parity/3 restarted while data/0 rebuilds", func(s *mc.State) (bool, string) {
		n := s.Node(msg.DataAddr(0)).(*data.Server)
		return s.Used().Restarts == 1 && !s.Crashed(msg.ParityAddr(3)) && n.Incarnation() > 0 && n.DegradedBlocks() > 0, ""
	})
	if r := reachByWalks(p, midRebuild); r.Outcome != mc.GoalFound {
		t.Errorf("%s: %q not reached: %s after %d states", p.Name, midRebuild.Name, r.Outcome, r.States)
	}
	noViolationByWalks(t, p, walks(25000))

	// A parity server restarting while the stripe's other data servers
	// write during the snapshot: the walks reach a restart mid-rebuild,
	// the rebuild still ends, and no violation.
	q := RestartParitySnapshot.MC()
	r := reachByWalks(q, midRebuild)
	if r.Outcome != mc.GoalFound {
		t.Fatalf("%s: %q not reached: %s after %d states", q.Name, midRebuild.Name, r.Outcome, r.States)
	}
	o := q.Options(mc.Random)
	o.MaxTime, o.Seed, o.Walks, o.Workers = 0, 1, 200, 1 // bounded by walks, as reachByWalks
	o.Goals = []mc.Predicate{mc.Pred("data/0 rebuilt", func(s *mc.State) (bool, string) {
		return s.Node(msg.DataAddr(0)).(*data.Server).DegradedBlocks() == 0, ""
	})}
	if r2 := mc.Search(r.Final, o); r2.Outcome != mc.GoalFound {
		t.Errorf("%s: data/0 never rebuilt after %q: %s", q.Name, midRebuild.Name, r2.Outcome)
	}
	noViolationByWalks(t, q, walks(20000))

	m := RestartReplaceData.MC()
	race := mc.Pred("data/0 restarted, then replaced", func(s *mc.State) (bool, string) {
		n := s.Node(msg.DataAddr(0)).(*data.Server)
		return s.Used().Restarts == 1 && n.Incarnation() > 0 && !s.Crashed(msg.DataAddr(0)), ""
	})
	if r := reachByWalks(m, race); r.Outcome != mc.GoalFound {
		t.Errorf("%s: %q not reached: %s after %d states", m.Name, race.Name, r.Outcome, r.States)
	}
	noViolationByWalks(t, m, walks(60000))
}

// noViolationByWalks runs n seeded random walks of sc (seed 1, one
// worker) and fails the test unless they all run without a violation:
// bounded by walks, not by time, so a busy machine searches the same
// states.
func noViolationByWalks(t *testing.T, sc *mc.Scenario, n int) {
	t.Helper()
	o := sc.Options(mc.Random)
	o.MaxTime, o.Seed, o.Walks, o.Workers = 0, 1, n, 1
	r := mc.Search(sc.Init(), o)
	if r.Outcome != mc.WalksDone {
		t.Fatalf("%s: %s after %d walks: %s: %s", sc.Name, r.Outcome, n, r.Predicate, r.Explanation)
	}
	t.Logf("%s: %d walks, %d states, depth %d in %v", sc.Name, n, r.States, r.MaxDepth, r.Elapsed.Round(time.Millisecond))
}

// reachByWalks runs 200 seeded random walks of sc (seed 1) until goal
// holds: bounded by walks, not by time, so a busy machine gives the same
// answer.
func reachByWalks(sc *mc.Scenario, goal mc.Predicate) *mc.Result {
	o := sc.Options(mc.Random)
	o.MaxTime, o.Seed, o.Walks, o.Workers = 0, 1, 200, 1
	o.Goals = []mc.Predicate{goal}
	return mc.Search(sc.Init(), o)
}

// reachesAll fails the test unless reachByWalks reaches each of goals.
func reachesAll(t *testing.T, sc *mc.Scenario, goals ...mc.Predicate) {
	t.Helper()
	for _, g := range goals {
		r := reachByWalks(sc, g)
		if r.Outcome != mc.GoalFound {
			t.Fatalf("%s: %s not reached: %s after %d states (%s: %s)", sc.Name, g.Name, r.Outcome, r.States, r.Predicate, r.Explanation)
		}
		t.Logf("%s: %s reached after %d states, in %d steps", sc.Name, g.Name, r.States, len(r.Trace))
	}
}
