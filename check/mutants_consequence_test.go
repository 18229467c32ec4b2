//go:build mutants

package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// Consequence prediction still finds every mutant of mutantCases that
// BFS finds, in no more states.
func TestConsequenceMutants(t *testing.T) {
	for _, c := range mutantCases {
		if c.st != mc.BFS {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			c.set(c.name)
			defer c.set("")
			full := c.sc.Run(mc.BFS, mc.Options{})
			opt := c.sc.Options(mc.BFS)
			opt.Consequence = true
			cp := mc.Search(c.sc.Init(), opt)
			if cp.Outcome != mc.Violation || cp.Predicate != c.finds {
				t.Fatalf("consequence prediction: %s %q after %d states", cp.Outcome, cp.Predicate, cp.States)
			}
			if cp.States > full.States {
				t.Errorf("consequence prediction took %d states, bfs %d", cp.States, full.States)
			}
			t.Logf("%s on %s: bfs %d states, consequence prediction %d", c.name, c.sc.Name, full.States, cp.States)
		})
	}
}
