package paxos

import (
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/mc/mctest"
)

// TestStateCount explores Paxos with 3 servers to exhaustion, with one
// client, and with two under -long (2.4 million states, about 0.8 GB and
// 10 s). Every delivery is a step here, so the counts are not
// Stateright's (see TestStateCountNoOpsSkipped).
func TestStateCount(t *testing.T) {
	mctest.Exhausts(t, Scenario(3, []string{"A"}, false), 605)
	if *mctest.Long {
		mctest.Exhausts(t, Scenario(3, []string{"A", "B"}, false), 2410733)
	}
}

// TestStateCountNoOpsSkipped explores the same models with
// Settings.SkipNoOps (Stateright's rule: a delivery that changes nothing
// and sends nothing is no step, and the message stays in flight): 605 ->
// 213 states with one client, 2,410,733 -> 62,841 (38x) with two. The
// two-client count is not Stateright's 16,668 because this Paxos is not
// Stateright's paxos.rs message for message (there a server that decided
// answers every request from its accepted value and ignores the rest, a
// proposer counts its own prepare without a message, and so on);
// examples/paxos/stateright is, and has that count.
func TestStateCountNoOpsSkipped(t *testing.T) {
	for _, c := range []struct {
		values []string
		states int
	}{{[]string{"A"}, 213}, {[]string{"A", "B"}, 62841}} {
		sc := Scenario(3, c.values, false)
		sc.Settings.SkipNoOps = true
		mctest.Exhausts(t, sc, c.states)
	}
	sc := Scenario(3, []string{"A", "B"}, true)
	sc.Settings.SkipNoOps = true
	if r := sc.Run(mc.BFS, mc.Options{Workers: 2}); r.Outcome != mc.Violation || r.Predicate != "servers decide one value" {
		t.Errorf("accept-below-promise bug not found with no-ops skipped: %s %q", r.Outcome, r.Predicate)
	}
}

// TestDecides: on some path both clients finish, so the safety search
// above is not vacuous.
func TestDecides(t *testing.T) {
	sc := Scenario(3, []string{"A", "B"}, false)
	o := sc.Options(mc.BFS)
	o.Goals = []mc.Predicate{mc.ClientsDonePred()}
	if r := mc.Search(sc.Init(), o); r.Outcome != mc.GoalFound {
		t.Fatalf("clients never done: %s", r.Outcome)
	}
}

// TestAcceptBelowPromiseFound: an acceptor that accepts below its promise
// lets two values be decided; the checker finds it and the trace reads as
// the protocol's own words.
func TestAcceptBelowPromiseFound(t *testing.T) {
	tr := mctest.Violates(t, Scenario(3, []string{"A", "B"}, true), mc.Options{Workers: 2},
		"deliver client/0 -> server/0 Put{Value:\"A\"}", "Promise{Ballot:(1,", "decided \"")
	if strings.Contains(tr, "*paxos.") || strings.Contains(tr, "0x") {
		t.Errorf("trace prints a type name or a pointer:\n%s", tr)
	}
}
