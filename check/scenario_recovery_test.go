package check

import (
	"github.com/amalgam-store/amalgam/mc"
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
	svc := func(s *mc.State) *reconfig.Service { return s.Node(msg.ReconfigAddr).(*reconfig.Service) }
	goals := []mc.Predicate{
		mc.Pred("a replacement postponed", func(s *mc.State) (bool, string) {
			return len(svc(s).Postponed()) > 0, ""
		}),
		mc.Pred("all three replaced and rebuilt, client done", func(s *mc.State) (bool, string) {
			rc := svc(s)
			return rc.Config().Num == 3 && !rc.Busy() && len(rc.Degraded()) == 0 && mc.ClientsDone(s), ""
		}),
	}
	for _, g := range goals {
		o := SuspectDegradedStripe.Options(mc.Random)
		o.Goals = []mc.Predicate{g}
		o.MaxTime, o.Seed = 60*time.Second, 1
		r := mc.Search(SuspectDegradedStripe.Init(), o)
		if r.Outcome != mc.GoalFound {
			t.Fatalf("%s not reached: %s after %d states (%s: %s)", g.Name, r.Outcome, r.States, r.Predicate, r.Explanation)
		}
		t.Logf("%s: reached after %d states, %v, in %d steps", g.Name, r.States, r.Elapsed.Round(time.Millisecond), len(r.Trace))
	}
}
