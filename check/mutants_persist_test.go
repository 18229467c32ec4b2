//go:build mutants

package check

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// TestPersistMutants: the search Mutants names (BFS of a restart scenario,
// or seeded random walks) finds each persistence mutant within
// mutantBound states, with a trace that replays. The unmutated protocol
// passes the same searches (TestRestartScenariosExhaustive; for random
// walks, 10 s of them here).
// Run with: go test -tags mutants -run TestPersistMutants -v ./check/
func TestPersistMutants(t *testing.T) {
	searchMutants(t, "persistence", 2, func(m Mutant) time.Duration {
		if m.Strategy == mc.Random {
			return 10 * time.Second
		}
		return 0
	})
}
