package mc

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/reconfig"
)

// TestSuspectDegradedStripeReaches shows that random walks of
// suspect-degraded-stripe reach what the scenario is about: a replacement
// postponed by SLC, and later every replacement done, rebuilt and
// reported, with the client's operations finished.
func TestSuspectDegradedStripeReaches(t *testing.T) {
	svc := func(s *State) *reconfig.Service { return s.Node(msg.ReconfigAddr).(*reconfig.Service) }
	goals := []Predicate{
		Pred("a replacement postponed", func(s *State) (bool, string) {
			return len(svc(s).Postponed()) > 0, ""
		}),
		Pred("all three replaced and rebuilt, client done", func(s *State) (bool, string) {
			rc := svc(s)
			return rc.Config().Num == 3 && !rc.Busy() && len(rc.Degraded()) == 0 && ClientsDone(s), ""
		}),
	}
	for _, g := range goals {
		o := SuspectDegradedStripe.Options(Random)
		o.Goals = []Predicate{g}
		o.MaxTime, o.Seed = 60*time.Second, 1
		r := Search(SuspectDegradedStripe.Init(), o)
		if r.Outcome != GoalFound {
			t.Fatalf("%s not reached: %s after %d states (%s: %s)", g.Name, r.Outcome, r.States, r.Predicate, r.Explanation)
		}
		t.Logf("%s: reached after %d states, %v, in %d steps", g.Name, r.States, r.Elapsed.Round(time.Millisecond), len(r.Trace))
	}
}
