package check

import (
	"fmt"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"

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

// TestHeldAcrossReplacementsReaches shows that random walks of
// held-across-replacements reach what the scenario is about: a request
// held by the first replacement, one held by the second, and both
// replacements rebuilt with the clients done.
func TestHeldAcrossReplacementsReaches(t *testing.T) {
	held := func(inc uint64) mc.Predicate {
		return mc.Pred(fmt.Sprintf("a request held at incarnation %d", inc), func(s *mc.State) (bool, string) {
			d := s.Node(msg.DataAddr(0)).(*data.Server)
			return d.Incarnation() == inc && d.Held() > 0, ""
		})
	}
	done := mc.Pred("both replaced and rebuilt, clients done", func(s *mc.State) (bool, string) {
		rc := s.Node(msg.ReconfigAddr).(*reconfig.Service)
		return rc.Config().Num == 2 && !rc.Busy() && len(rc.Degraded()) == 0 && mc.ClientsDone(s), ""
	})
	for _, g := range []mc.Predicate{held(2), held(3), done} {
		r := reachByWalks(HeldAcrossReplacements.MC(), g)
		if r.Outcome != mc.GoalFound {
			t.Fatalf("%s not reached: %s after %d states (%s: %s)", g.Name, r.Outcome, r.States, r.Predicate, r.Explanation)
		}
		t.Logf("%s: reached after %d states, in %d steps", g.Name, r.States, len(r.Trace))
	}
}
