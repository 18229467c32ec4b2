package mc_test

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/examples/twophase"
	"github.com/amalgam-store/amalgam/mc"
)

// rm0Prepared is a recovery point for the deep strategy's tests.
func rm0Prepared() []mc.Predicate {
	return []mc.Predicate{mc.Pred("rm/0 prepared", func(s *mc.State) (bool, string) {
		return s.Node(twophase.RMAddr(0)).(*twophase.RM).State == twophase.Prepare, ""
	})}
}

// TestDeepFindsBug: rounds of a walk to rm/0 prepared, then BFS, find
// the early commit within 1,000 states (248 measured with seed 3; a
// round's BFS exhausts its few hundred states long before its time
// bound, so the count is the same on a loaded machine); the trace (walk,
// then BFS path) replays from the initial state to the same violation.
func TestDeepFindsBug(t *testing.T) {
	sc := twophase.Scenario(3, true)
	sc.Points = rm0Prepared
	r := sc.RunDeep(mc.Options{MaxStates: 1000, Seed: 3}, mc.DeepOptions{Round: time.Minute})
	if r.Outcome != mc.Violation {
		t.Fatalf("deep: %s after %d states", r.Outcome, r.States)
	}
	rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
	if err != nil || rp.Predicate != r.Predicate || len(rp.Events) != len(r.Trace) {
		t.Fatalf("replay: %v, %q after %d of %d events", err, rp.Predicate, len(rp.Events), len(r.Trace))
	}
}

// TestDeepLimits: without a bug, deep rounds run until the state bound
// and report the deepest level a round's BFS completed, counted from the
// initial state, at most the depth BFS exhausts at; with
// Deepen as well.
func TestDeepLimits(t *testing.T) {
	sc := twophase.Scenario(3, false)
	sc.Points = rm0Prepared
	full := sc.Run(mc.BFS, mc.Options{})
	for _, d := range []mc.DeepOptions{{}, {Deepen: true}} {
		r := sc.RunDeep(mc.Options{MaxStates: 20 * full.States, Seed: 1}, d)
		if r.Outcome != mc.StateLimit || r.MaxDepth < 2 || r.MaxDepth > full.MaxDepth || r.States < 20*full.States {
			t.Fatalf("deep %+v: %s, %d states, depth %d (BFS: %d states, depth %d)", d, r.Outcome, r.States, r.MaxDepth, full.States, full.MaxDepth)
		}
	}
}

// TestDeepWithoutPoints: without recovery points, deep is one BFS from
// the initial state: the same states, exhausted.
func TestDeepWithoutPoints(t *testing.T) {
	sc := twophase.Scenario(3, false)
	full := sc.Run(mc.BFS, mc.Options{})
	if r := sc.Run(mc.Deep, mc.Options{}); r.Outcome != mc.Exhausted || r.States != full.States || r.MaxDepth != full.MaxDepth {
		t.Fatalf("deep: %s, %d states, depth %d; BFS: %d states, depth %d", r.Outcome, r.States, r.MaxDepth, full.States, full.MaxDepth)
	}
}
