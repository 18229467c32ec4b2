package shardedpaxos_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/check/baselines"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
)

// The thesis 4.2 scenario: one group with f=2 (members 0-2 full replicas,
// 3-4 witnesses), two clients writing different values ("blue" and "red")
// to the same block. Client 0 starts at member 0, the initial leader;
// client 1 starts at member 2.
var thesisCfg = shardedpaxos.Config{Layout: erasure.Layout{N: 5, G: 1, F: 2, Stripes: 1, BlockSize: 8}}

func fill(v byte) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = v
	}
	return b
}

var (
	blue = shardedpaxos.ID{Client: 1, Seq: 1}
	red  = shardedpaxos.ID{Client: 2, Seq: 1}
)

func thesisInit() *mc.State {
	nodes := shardedpaxos.Nodes(thesisCfg, []int{0})
	c0 := shardedpaxos.NewClient(1, thesisCfg, [][]msg.Op{{{Kind: msg.OpWrite, Block: 0, Data: fill(1)}}})
	c1 := shardedpaxos.NewClient(2, thesisCfg, [][]msg.Op{{{Kind: msg.OpWrite, Block: 0, Data: fill(2)}}})
	c1.SetLeaderGuess(0, 2)
	nodes[msg.ClientAddr(0)] = c0
	nodes[msg.ClientAddr(1)] = c1
	return baselines.NewState(nodes)
}

func member(s *mc.State, i int) *shardedpaxos.Replica {
	return s.Node(thesisCfg.Addr(0, i)).(*shardedpaxos.Replica)
}

// slot1 is member i's slot 1.
func slot1(s *mc.State, i int) (shardedpaxos.SlotView, bool) {
	for _, v := range member(s, i).Slots() {
		if v.Slot == 1 {
			return v, true
		}
	}
	return shardedpaxos.SlotView{}, false
}

// accepts holds when a member other than the proposing leader accepted v
// in slot 1 at the leader's ballot.
func accepts(v shardedpaxos.ID, leader int) mc.Predicate {
	return mc.Pred(fmt.Sprintf("a member other than %d accepted %v in slot 1", leader, v), func(s *mc.State) (bool, string) {
		lb, _ := member(s, leader).Leading()
		for i := 0; i < thesisCfg.Members(); i++ {
			if sv, ok := slot1(s, i); ok && i != leader && sv.Accepted && sv.Acc == v && sv.Ballot == lb {
				return true, fmt.Sprintf("member %d did", i)
			}
		}
		return false, "none did"
	})
}

// leadsWith holds when member i is an active leader, at a ballot above
// member j's latest ballot, and proposes v for slot 1 at it.
func leadsWith(i int, v shardedpaxos.ID, j int) mc.Predicate {
	return mc.Pred(fmt.Sprintf("member %d leads above member %d, proposing %v for slot 1", i, j, v), func(s *mc.State) (bool, string) {
		b, ok := member(s, i).Leading()
		if !ok {
			return false, fmt.Sprintf("member %d does not lead", i)
		}
		if ob, _ := member(s, j).Leading(); !ob.Less(b) {
			return false, fmt.Sprintf("member %d leads %v, not above member %d's %v", i, b, j, ob)
		}
		sv, ok := slot1(s, i)
		if !ok || !sv.Accepted || sv.Ballot != b || sv.Acc != v {
			return false, fmt.Sprintf("member %d proposes %+v for slot 1", i, sv)
		}
		return true, fmt.Sprintf("member %d leads %v with %v in slot 1", i, b, v)
	})
}

// held holds when at least n members accepted v in slot 1.
func held(v shardedpaxos.ID, n int) mc.Predicate {
	return mc.Pred(fmt.Sprintf("%d members accepted %v in slot 1", n, v), func(s *mc.State) (bool, string) {
		var ms []int
		for i := 0; i < thesisCfg.Members(); i++ {
			if sv, ok := slot1(s, i); ok && sv.Accepted && sv.Acc == v {
				ms = append(ms, i)
			}
		}
		return len(ms) >= n, fmt.Sprintf("members %v did", ms)
	})
}

// runs holds when member i runs for leader at a ballot above member j's
// latest ballot.
func runs(i, j int) mc.Predicate {
	return mc.Pred(fmt.Sprintf("member %d runs for leader above member %d", i, j), func(s *mc.State) (bool, string) {
		m := member(s, i)
		b, _ := m.Leading()
		ob, _ := member(s, j).Leading()
		return m.Role() == "candidate" && ob.Less(b), fmt.Sprintf("member %d is %s at %v, member %d at %v", i, m.Role(), b, j, ob)
	})
}

// learns holds when member i knows v is chosen in slot 1.
func learns(i int, v shardedpaxos.ID) mc.Predicate {
	return mc.Pred(fmt.Sprintf("member %d knows %v is chosen in slot 1", i, v), func(s *mc.State) (bool, string) {
		sv, ok := slot1(s, i)
		return ok && sv.Chosen && sv.Val == v, fmt.Sprintf("slot 1 at member %d: %+v", i, sv)
	})
}

// thesisPlan is a punctuated search (thesis 4.3.3.2) through the leader
// changes of the thesis 4.2 trace, every phase a breadth-first search that
// checks the invariant and stops at its goal:
//
//  1. leader 0 proposes blue in slot 1 and some member accepts it (its
//     phase 2 reply stays in flight);
//  2. member 2 runs for leader, and
//  3. is elected without seeing blue, and proposes red in slot 1,
//  4. which a member not holding blue accepts;
//  5. member 0 runs again, above member 2, and
//  6. is elected and proposes blue again;
//  7. member 0 learns that blue is chosen, while two members still hold red;
//  8. member 2 runs again, above member 0, and
//  9. is elected, proposing red;
//  10. anything (the invariant is checked at every state).
//
// Timer firings are budgeted per path, cumulatively: elections, and the
// second timeout a member that granted a promise needs. Each phase is
// bounded by maxStates distinct states, not by time, so a loaded machine
// gives the same answer; run with one worker, each phase's goal state
// (and so the next phase's start) is the same on every run.
func thesisPlan(depth, maxStates int) []mc.Phase {
	inv := []mc.Predicate{baselines.OneValuePerSlotPred(baselines.LogSlots[shardedpaxos.ID, *shardedpaxos.Replica], thesisCfg.Quorum())}
	phase := func(name string, fires int, goal ...mc.Predicate) mc.Phase {
		return mc.Phase{Name: name, Options: mc.Options{Strategy: mc.BFS, Settings: mc.Settings{MaxTimerFires: fires},
			Invariants: inv, Goals: goal, MaxDepth: depth, MaxStates: maxStates}}
	}
	return []mc.Phase{
		phase("blue accepted", 0, accepts(blue, 0)),
		phase("member 2 runs", 1, runs(2, 0)),
		phase("member 2 leads with red", 1, leadsWith(2, red, 0)),
		phase("red accepted, blue still held", 1, mc.And(held(red, 2), held(blue, 2))),
		phase("member 0 runs again", 4, runs(0, 2)),
		phase("member 0 leads again with blue", 4, leadsWith(0, blue, 2)),
		phase("member 0 learns blue, red still held", 4, mc.And(learns(0, blue), held(red, 2))),
		phase("member 2 runs again", 7, runs(2, 0)),
		phase("member 2 leads again with red", 7, leadsWith(2, red, 0)),
		phase("two values chosen", 7),
	}
}

// thesisPhaseStates bounds each phase of thesisPlan: about twice what
// phases 1-8 of the correct protocol need in all (156,936 states with one
// worker; the mutant's whole plan needs 51,203), so on the correct
// protocol phase 9, which cannot reach its goal, ends at the bound.
const thesisPhaseStates = 300_000

// TestThesisPlanCorrect runs the guided search on the correct protocol: it
// must not find a violation: the plan reaches phase 9, where member 2
// would need a quorum without blue, which a correct leader's phase 2
// (counting replies to its own ballot only) leaves no room for.
func TestThesisPlanCorrect(t *testing.T) {
	if paxos.Mutant != "" {
		t.Skip("mutant build")
	}
	r := mc.RunGuided(thesisInit(), thesisPlan(9, thesisPhaseStates), mc.Options{Workers: 1})
	if r.Outcome == mc.Violation {
		t.Fatalf("violation of %s: %s", r.Predicate, r.Explanation)
	}
	// The plan must get as deep as on the mutant: only the phase that
	// needs a second value to win slot 1 is out of reach.
	if !strings.Contains(r.Explanation, `phase "member 2 leads again with red"`) {
		t.Fatalf("the plan stopped early: %s: %s", r.Outcome, r.Explanation)
	}
	t.Logf("guided search of the correct protocol: %s after %d states, %d steps of trace, %v (%s)",
		r.Outcome, r.States, len(r.Trace), r.Elapsed.Round(time.Millisecond), r.Explanation)
}
