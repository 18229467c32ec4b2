package check

import (
	"github.com/amalgam-store/amalgam/mc"
)

// OpPending holds once a data server has an operation it has not yet
// committed (its PREPAREs or acknowledgements in flight).
var OpPending = mc.Pred("an operation pending at a data server", func(s *mc.State) (bool, string) {
	for _, a := range s.Addrs() {
		if p, ok := s.Node(a).(interface{ PendingOps() int }); ok && p.PendingOps() > 0 && !s.Crashed(a) {
			return true, ""
		}
	}
	return false, ""
})

// plan is the scenario's guided plan: its own, or for a recovery scenario
// BFS to the first state with an operation pending, then on to the first
// where the scenario's recovery points hold in turn (a replacement under
// way, then a block being rebuilt; a restart), then BFS with the
// scenario's settings from there. Scenarios without recovery points keep
// the engine's default plan (nil).
func (sc *Scenario) plan() func(*mc.Scenario) []mc.Phase {
	if sc.Plan != nil {
		return sc.Plan
	}
	points := sc.points()
	if len(points) == 0 {
		return nil
	}
	return func(m *mc.Scenario) []mc.Phase {
		var phases []mc.Phase
		goals := append([]mc.Predicate{OpPending}, points...)
		if sc.Replace != nil {
			// A replacement starts before its block is rebuilt.
			goals = append([]mc.Predicate{OpPending, ReplacementUnderWay, Rebuilding}, points[2:]...)
		}
		for _, g := range goals {
			o := m.Options(mc.BFS)
			o.Goals, o.MaxDepth = []mc.Predicate{g}, 0
			phases = append(phases, mc.Phase{Name: g.Name, Options: o})
		}
		return append(phases, mc.Phase{Name: "search from there", Options: m.Options(mc.BFS)})
	}
}
