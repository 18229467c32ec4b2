package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// Consequence prediction explores a subset of the states BFS does: a
// node's timers fire only in the first state where its state is seen.
func TestConsequencePrediction(t *testing.T) {
	full := NormalLossy.Run(mc.BFS, mc.Options{})
	opt := NormalLossy.Options(mc.BFS)
	opt.Consequence = true
	cp := mc.Search(NormalLossy.Init(), opt)
	if full.Outcome != mc.Exhausted || cp.Outcome != mc.Exhausted {
		t.Fatalf("outcomes: bfs %s, consequence prediction %s", full.Outcome, cp.Outcome)
	}
	if full.States != 7575 || cp.States != 2725 {
		t.Fatalf("states: bfs %d, consequence prediction %d; want 7575 and 2725", full.States, cp.States)
	}
	t.Logf("normal-lossy: bfs %d states, consequence prediction %d", full.States, cp.States)
}
