package mc_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/examples/paxos"
	"github.com/amalgam-store/amalgam/examples/twophase"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
)

// lmcReplays checks that LMC's violation replays under global semantics
// (mc.Replay, from its saved trace) to the same invariant's failure.
func lmcReplays(t *testing.T, sc *mc.Scenario, r *mc.Result) {
	t.Helper()
	rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
	if err != nil || rp.Predicate != r.Predicate {
		t.Errorf("%s: LMC's trace of %q does not replay: %v, fails %q", sc.Name, r.Predicate, err, rp.Predicate)
	}
}

// TestLMCPaxosOneProposal: on one-ballot Paxos (3 servers, clients
// putting A and B) global BFS and LMC both find no violation without a
// bug and both find each injected bug (the acceptor accepting below its
// promise, the proposer taking the last promise's value), LMC's trace
// replaying under global semantics.
func TestLMCPaxosOneProposal(t *testing.T) {
	for _, bug := range []string{"", "accept-below-promise", "last-promise"} {
		c := paxos.OneProposal()
		c.AcceptBelowPromise, c.LastPromise = bug == "accept-below-promise", bug == "last-promise"
		sc := paxos.ScenarioOf(c)
		g := sc.Run(mc.BFS, mc.Options{Workers: 1})
		l, st := sc.RunLMC(mc.Options{})
		t.Logf("%s: bfs %s after %d states, %d transitions, %v; lmc %s after %d local states, %d transitions, checks %d/%d, %d global states searched, %v; lmc/bfs transitions %.3f, time %.2f",
			sc.Name, g.Outcome, g.States, g.Transitions, g.Elapsed, l.Outcome, l.States, st.Transitions, st.Passed, st.Checks, st.Searched, l.Elapsed,
			float64(st.Transitions)/float64(max(g.Transitions, 1)), l.Elapsed.Seconds()/max(g.Elapsed.Seconds(), 1e-9))
		want := mc.Exhausted
		if bug != "" {
			want = mc.Violation
		}
		if g.Outcome != want || l.Outcome != want {
			t.Errorf("%s: bfs %s, lmc %s, want %s", sc.Name, g.Outcome, l.Outcome, want)
		}
		if l.Outcome == mc.Violation {
			lmcReplays(t, sc, l)
		}
		if st.Abandoned != 0 {
			t.Errorf("%s: %d checks gave up", sc.Name, st.Abandoned)
		}
	}
}

// TestLMCPaxosRetrying: on two-proposal Paxos whose proposers keep
// retrying (eight ballots per server, paxos.TwoProposalsRetrying, the
// model whose depth TestLMCDepth measures) global BFS finds no violation
// within 10 events and LMC none within causal bound 5 without a bug, and
// both find each injected bug, LMC's trace replaying under global
// semantics. The last-promise bug needs a causal depth above 6 (LMC
// exhausts bound 6 without it, in 5 to 10 s), so LMC runs unbounded for
// the bugs, and its walks find both.
func TestLMCPaxosRetrying(t *testing.T) {
	for _, bug := range []string{"", "accept-below-promise", "last-promise"} {
		c := paxos.TwoProposalsRetrying(8)
		c.AcceptBelowPromise, c.LastPromise = bug == "accept-below-promise", bug == "last-promise"
		sc := paxos.ScenarioOf(c)
		g := sc.Run(mc.BFS, mc.Options{Workers: 1, MaxDepth: 10})
		bound, want := 5, mc.Exhausted
		if bug != "" {
			bound, want = 0, mc.Violation
		}
		l, st := sc.RunLMC(mc.Options{MaxDepth: bound})
		t.Logf("%s: bfs %s after %d states; lmc %s after %d local states (causal bound %d), checks %d/%d, %d walks, found by a walk's own execution: %v",
			sc.Name, g.Outcome, g.States, l.Outcome, l.States, st.Bound, st.Passed, st.Checks, st.Walks, st.ByWalk)
		if g.Outcome != want || l.Outcome != want {
			t.Errorf("%s: bfs %s, lmc %s, want %s", sc.Name, g.Outcome, l.Outcome, want)
		}
		if l.Outcome == mc.Violation {
			lmcReplays(t, sc, l)
		}
		if bug == "" && st.Abandoned != 0 {
			t.Errorf("%s: %d checks gave up", sc.Name, st.Abandoned)
		}
	}
}

// TestLMCTwoPhase: LMC finds the TM committing early and nothing in the
// correct protocol; its violation replays.
func TestLMCTwoPhase(t *testing.T) {
	for _, early := range []bool{false, true} {
		sc := twophase.Scenario(3, early)
		r, _ := sc.RunLMC(mc.Options{})
		want := mc.Exhausted
		if early {
			want = mc.Violation
			lmcReplays(t, sc, r)
		}
		if r.Outcome != want {
			t.Errorf("%s early=%v: %s, want %s", sc.Name, early, r.Outcome, want)
		}
	}
}

// everyNode reads every node whole: every combination of local states.
func everyNode(nodes ...node.Addr) mc.Predicate {
	return mc.Pred("combination", func(*mc.State) (bool, string) { return true, "" }).Projected(mc.Projection{
		Reads: func(a node.Addr, _ node.Node) bool { return len(nodes) == 0 || slices.Contains(nodes, a) },
	})
}

// tuple names the node values of s at the given addresses.
func tuple(s *mc.State, nodes []node.Addr) string {
	out := ""
	for _, a := range nodes {
		out += fmt.Sprintf("%s=%x %v;", a, s.Node(a).Hash(), s.Crashed(a))
	}
	return out
}

// TestLMCCombinationsAreGlobalProjection: the combinations of local
// states LMC's a-posteriori check confirms are exactly the projection of
// the globally reachable states on those nodes: for 2PC with 3 RMs
// (every node) and for Paxos with one client (the servers).
func TestLMCCombinationsAreGlobalProjection(t *testing.T) {
	for _, c := range []struct {
		sc    *mc.Scenario
		nodes []node.Addr
	}{
		{twophase.Scenario(3, false), nil},
		{paxos.Scenario(3, []string{"A"}, false), []node.Addr{paxos.ServerAddr(0), paxos.ServerAddr(1), paxos.ServerAddr(2)}},
	} {
		init := c.sc.Init()
		nodes := c.nodes
		if nodes == nil {
			nodes = init.Addrs()
		}
		global := map[string]bool{}
		o := c.sc.Options(mc.BFS)
		o.Invariants = []mc.Predicate{mc.Pred("record", func(s *mc.State) (bool, string) {
			global[tuple(s, nodes)] = true
			return true, ""
		})}
		if r := mc.Search(init, o); r.Outcome != mc.Exhausted {
			t.Fatalf("%s: bfs %s", c.sc.Name, r.Outcome)
		}
		local := map[string]bool{}
		r, st := mc.LMCValid(c.sc.Init(), mc.LMCOptions{Settings: c.sc.Settings, Invariants: []mc.Predicate{everyNode(c.nodes...)}},
			func(s *mc.State) { local[tuple(s, nodes)] = true })
		t.Logf("%s: %d global combinations, %d confirmed by LMC (%d local states, %d built, checks %d/%d, %d global states searched)",
			c.sc.Name, len(global), len(local), r.States, st.Built, st.Passed, st.Checks, st.Searched)
		if r.Outcome != mc.Exhausted || st.Abandoned != 0 || !maps.Equal(global, local) {
			var missing, extra int
			for k := range global {
				if !local[k] {
					missing++
				}
			}
			for k := range local {
				if !global[k] {
					extra++
				}
			}
			t.Errorf("%s: lmc %s, %d checks gave up; %d global combinations LMC lacks, %d LMC confirms that are not global",
				c.sc.Name, r.Outcome, st.Abandoned, missing, extra)
		}
	}
}

// TestLMCWitnessesReplay: every execution LMC keeps to a local state (found
// by a check, a causal merge or a walk) replays under global semantics to
// that local state, on two-ballot Paxos up to causal bound 5 and on 2PC;
// the walks ran.
func TestLMCWitnessesReplay(t *testing.T) {
	for _, sc := range []*mc.Scenario{paxos.ScenarioOf(paxos.TwoProposals()), twophase.Scenario(3, false)} {
		o := mc.LMCOptions{Settings: sc.Settings, Invariants: sc.Invariants(), MaxDepth: 5}
		n, bad := mc.LMCWitnesses(sc.Init(), o)
		_, st := mc.RunLMC(sc.Init(), o)
		t.Logf("%s: %d executions replayed; %d walks took %d events, node depth %v", sc.Name, n, st.Walks, st.WalkSteps, st.Confirmed)
		if bad != "" || n == 0 || st.WalkSteps == 0 {
			t.Errorf("%s: %d executions replayed, %d walk events: %s", sc.Name, n, st.WalkSteps, bad)
		}
	}
}
