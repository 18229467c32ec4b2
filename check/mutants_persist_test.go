//go:build mutants

package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// TestPersistMutants: the search Mutants names (BFS of a restart scenario,
// or seeded random walks) finds each persistence mutant within
// mutantBound states, with a trace that replays. The unmutated protocol
// passes the same searches (TestRestartScenariosExhaustive; random walks
// here, as far as the mutant's went, and in TestRestartScenariosReach).
// Run with: go test -tags mutants -run TestPersistMutants -v ./check/
func TestPersistMutants(t *testing.T) {
	searchMutants(t, "persistence", 2, func(m Mutant, found *mc.Result) int {
		if m.Strategy == mc.Random {
			return asFar(m, found)
		}
		return 0
	})
}
