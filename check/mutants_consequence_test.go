//go:build mutants

package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// Consequence prediction still finds every protocol mutant, which BFS
// finds, in no more states.
func TestConsequenceMutants(t *testing.T) {
	for _, c := range mutantsOfKind(t, "protocol") {
		t.Run(c.Name, func(t *testing.T) {
			if err := SetMutant(c.Name); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = SetMutant("") }()
			full := c.sc.Run(mc.BFS, mc.Options{})
			opt := c.sc.Options(mc.BFS)
			opt.Consequence = true
			cp := mc.Search(c.sc.Init(), opt)
			if cp.Outcome != mc.Violation || cp.Predicate != c.Finds {
				t.Fatalf("consequence prediction: %s %q after %d states", cp.Outcome, cp.Predicate, cp.States)
			}
			if cp.States > full.States {
				t.Errorf("consequence prediction took %d states, bfs %d", cp.States, full.States)
			}
			t.Logf("%s on %s: bfs %d states, consequence prediction %d", c.Name, c.sc.Name, full.States, cp.States)
		})
	}
}
