//go:build mutants

package check

import (
	"testing"
	"time"
)

// TestMutants: BFS of the scenario Mutants names finds each protocol
// mutant within mutantBound states, with a trace that replays; the
// unmutated protocol passes the same searches (exhausted, or 60 s).
// Run with: go test -tags mutants -run TestMutants -v ./check/
func TestMutants(t *testing.T) {
	searchMutants(t, "protocol", 2, func(Mutant) time.Duration { return 60 * time.Second })
}
