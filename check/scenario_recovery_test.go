package check

import (
	"fmt"
	"testing"

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
	reachesAll(t, SuspectDegradedStripe.MC(), goals...)
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
	reachesAll(t, HeldAcrossReplacements.MC(), held(2), held(3), done)
}

// TestMultiStripeSnapshotReaches shows that random walks of
// multi-stripe-snapshot reach what the scenario is about: one snapshot
// run of data/0 covering stripes 0 and 3 while a client's write is in
// flight, and later data/0 rebuilt with the clients done.
func TestMultiStripeSnapshotReaches(t *testing.T) {
	d0 := func(s *mc.State) *data.Server { return s.Node(msg.DataAddr(0)).(*data.Server) }
	goals := []mc.Predicate{
		mc.Pred("a run of stripes 0 and 3 under a write", func(s *mc.State) (bool, string) {
			return d0(s).RebuildingRun(0, 2) && !mc.ClientsDone(s) && d0(s).Incarnation() == 2, ""
		}),
		mc.Pred("data/0 replaced and rebuilt, clients done", func(s *mc.State) (bool, string) {
			rc := s.Node(msg.ReconfigAddr).(*reconfig.Service)
			return rc.Config().Num == 1 && d0(s).DegradedBlocks() == 0 && len(rc.Degraded()) == 0 && mc.ClientsDone(s), ""
		}),
	}
	reachesAll(t, MultiStripeSnapshot.MC(), goals...)
}

// TestMultiStripeSnapshotBounded: a breadth-first search of
// multi-stripe-snapshot bounded by states finds no violation.
func TestMultiStripeSnapshotBounded(t *testing.T) {
	o := MultiStripeSnapshot.Options(mc.BFS)
	o.MaxTime, o.MaxStates, o.Workers = 0, 200_000, 1
	r := mc.Search(MultiStripeSnapshot.Init(), o)
	if r.Outcome == mc.Violation {
		t.Fatalf("%s: %s\n%s", r.Predicate, r.Explanation, r.Trace)
	}
	t.Logf("%s after %d states", r.Outcome, r.States)
}
