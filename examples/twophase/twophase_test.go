package twophase

import (
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/mc/mctest"
)

// TestStateCount explores two-phase commit to exhaustion. The counts are
// this engine's, not Stateright's (288 for 3 RMs, 8,832 for 5): here a
// state also holds the pending timers, the messages in flight (consumed
// on delivery) and the number of timers fired on the path, and a timer
// or message that changes nothing still makes a step. With -long it also
// explores 5 RMs (1.4 million states, about 0.7 GB and 10 s).
func TestStateCount(t *testing.T) {
	mctest.Exhausts(t, Scenario(3, false), 5312)
	mctest.Exhausts(t, Scenario(4, false), 86162)
	if *mctest.Long {
		mctest.Exhausts(t, Scenario(5, false), 1437656, mc.Options{Strategy: mc.BFS, Workers: 2})
	}
}

// TestStateCountNoOpsSkipped explores the same models with
// Settings.SkipNoOps (Stateright's rule: a delivery or timer firing that
// changes nothing and sends nothing is no step): 13x fewer states with 3
// RMs, 32x with 4. The counts are still not Stateright's 288 and 8,832,
// because the models differ beyond that rule: Stateright's TM commits in
// a step of its own after the last Prepared, and its state is only the
// RMs', the TM's and the set of messages sent, while here an RM's
// spontaneous step it did not take stays a pending timer in the state
// (an RM aborted by its own timer, by the TM's Abort before or after
// preparing holds three different timer lists) and the state counts the
// timer firings on its path. StaterightScenario removes those
// differences (TestStaterightCounts).
func TestStateCountNoOpsSkipped(t *testing.T) {
	for _, c := range []struct{ rms, states int }{{3, 406}, {4, 2656}} {
		sc := Scenario(c.rms, false)
		sc.Settings.SkipNoOps = true
		mctest.Exhausts(t, sc, c.states)
	}
	sc := Scenario(3, true)
	sc.Settings.SkipNoOps = true
	if r := sc.Run(mc.BFS, mc.Options{}); r.Outcome != mc.Violation {
		t.Errorf("commit-early bug not found with no-ops skipped: %s", r.Outcome)
	}
}

// TestCommitEarlyFound: a TM that commits before every RM has prepared
// is caught, and the trace reads as the protocol's own words.
func TestCommitEarlyFound(t *testing.T) {
	tr := mctest.Violates(t, Scenario(3, true), mc.Options{},
		"fire rm/", "timer prepare", "deliver rm/", "Prepared{RM:", "tm: committed, prepared [")
	if strings.Contains(tr, "*twophase.") || strings.Contains(tr, "0x") {
		t.Errorf("trace prints a type name or a pointer:\n%s", tr)
	}
}

// TestStaterightCounts: the model stated as Stateright's 2pc.rs
// (StaterightScenario: messages a set that delivery does not consume,
// spontaneous steps as messages to self, no timers) has exactly
// Stateright's state counts, with no-ops skipped and without (a no-op
// delivery there leaves the state as it was), by BFS with 1 and 2
// workers and by DFS; the commit-early bug is still found.
func TestStaterightCounts(t *testing.T) {
	for _, c := range []struct{ rms, states int }{{3, 288}, {5, 8832}} {
		for _, skip := range []bool{true, false} {
			sc := StaterightScenario(c.rms, false)
			sc.Settings.SkipNoOps = skip
			mctest.Exhausts(t, sc, c.states, mc.Options{Strategy: mc.BFS, Workers: 1},
				mc.Options{Strategy: mc.BFS, Workers: 2}, mc.Options{Strategy: mc.DFS})
		}
	}
	if r := StaterightScenario(3, true).Run(mc.BFS, mc.Options{}); r.Outcome != mc.Violation {
		t.Errorf("commit-early bug not found in the Stateright model: %s", r.Outcome)
	}
}
