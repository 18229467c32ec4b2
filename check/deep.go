package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/reconfig"
)

// The recovery points of the deep strategy (mc.Scenario.RunDeep): states
// inside a recovery, worth an exhaustive search from.
var (
	// ReplacementUnderWay: the service is stopping the old incarnation,
	// collecting answers or installing.
	ReplacementUnderWay = mc.Pred("a replacement under way", func(s *mc.State) (bool, string) {
		rc, ok := s.Node(msg.ReconfigAddr).(*reconfig.Service)
		return ok && rc.Busy(), ""
	})
	// Rebuilding: a server has a block to rebuild (its snapshot is not
	// complete yet).
	Rebuilding = mc.Pred("a block being rebuilt", func(s *mc.State) (bool, string) {
		for _, a := range s.Addrs() {
			if d, ok := s.Node(a).(interface{ DegradedBlocks() int }); ok && d.DegradedBlocks() > 0 && !s.Crashed(a) {
				return true, ""
			}
		}
		return false, ""
	})
	// Restarted: a server restarted from what it persisted.
	Restarted = mc.Pred("a server restarted", func(s *mc.State) (bool, string) { return s.Used().Restarts > 0, "" })
)

// points are the scenario's recovery points: its own, or a replacement
// under way and a block being rebuilt when it replaces servers, and a
// restart when it restarts them.
func (sc *Scenario) points() []mc.Predicate {
	if sc.Points != nil {
		return sc.Points()
	}
	var ps []mc.Predicate
	if sc.Replace != nil {
		ps = append(ps, Rebuilding, ReplacementUnderWay)
	}
	if sc.Settings.MaxRestarts != 0 {
		ps = append(ps, Restarted)
	}
	return ps
}
