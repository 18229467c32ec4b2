package stateright

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/mc/mctest"
)

// TestStaterightCount: 3 servers and 2 clients have exactly Stateright's
// 16,668 states, linearizable (BFS with 1 and 2 workers, DFS). The event
// rule that makes it, beside the model itself: no-op deliveries are no
// step (SkipNoOps); with them stepping, 301,099. The state keeps the
// order of every return, which Stateright's tester does not, but here it
// splits nothing: one value is decided, so only one client's put returns.
func TestStaterightCount(t *testing.T) {
	sc := Scenario(3, 2)
	mctest.Exhausts(t, sc, 16668, mc.Options{Strategy: mc.BFS, Workers: 1}, mc.Options{Strategy: mc.BFS, Workers: 2}, mc.Options{Strategy: mc.DFS})
	sc.Settings.SkipNoOps = false
	mctest.Exhausts(t, sc, 301099, mc.Options{Strategy: mc.BFS, Workers: 2})
}
