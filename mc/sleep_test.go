package mc_test

import (
	"testing"

	"github.com/amalgam-store/amalgam/examples/paxos"
	"github.com/amalgam-store/amalgam/examples/twophase"
	"github.com/amalgam-store/amalgam/mc"
)

// TestSleepSets: with sleep sets, BFS (1 and 2 workers) finds exactly the
// states it finds without, through fewer transitions, and still finds
// the examples' injected bugs.
func TestSleepSets(t *testing.T) {
	noops := twophase.Scenario(3, false)
	noops.Settings.SkipNoOps = true
	for _, sc := range []*mc.Scenario{twophase.Scenario(3, false), noops, twophase.StaterightScenario(3, false),
		paxos.Scenario(3, []string{"A"}, false), paxos.Scenario(3, []string{"A", "B"}, false)} {
		o := mc.Options{Workers: 1}
		if sc.Name == "paxos-3-2" {
			o.MaxDepth = 9
		}
		want := sc.Run(mc.BFS, o)
		for _, w := range []int{1, 2} {
			o.Workers, o.SleepSets = w, true
			r := sc.Run(mc.BFS, o)
			t.Logf("%s, %d workers: %d states, %d transitions; with sleep sets %d states, %d transitions",
				sc.Name, w, want.States, want.Transitions, r.States, r.Transitions)
			if r.Outcome != want.Outcome || r.States != want.States || r.Transitions >= want.Transitions {
				t.Errorf("%s, %d workers: with sleep sets %s %d states %d transitions, without %s %d states %d transitions",
					sc.Name, w, r.Outcome, r.States, r.Transitions, want.Outcome, want.States, want.Transitions)
			}
		}
	}
	for _, sc := range []*mc.Scenario{twophase.Scenario(3, true), paxos.Scenario(3, []string{"A", "B"}, true)} {
		want := sc.Run(mc.BFS, mc.Options{})
		r := sc.Run(mc.BFS, mc.Options{SleepSets: true})
		if want.Outcome != mc.Violation || r.Outcome != mc.Violation || r.Predicate != want.Predicate || len(r.Trace) != len(want.Trace) {
			t.Errorf("%s: with sleep sets %s (%s, trace %d), without %s (%s, trace %d)", sc.Name,
				r.Outcome, r.Predicate, len(r.Trace), want.Outcome, want.Predicate, len(want.Trace))
		}
	}
}
