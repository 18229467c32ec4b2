//go:build mutants

package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// TestMutants: BFS of the scenario Mutants names finds each protocol
// mutant within mutantBound states, with a trace that replays; the
// unmutated protocol passes the same searches to exhaustion
// (exhaustStates).
// Run with: go test -tags mutants -run TestMutants -v ./check/
func TestMutants(t *testing.T) {
	searchMutants(t, "protocol", 2, func(Mutant, *mc.Result) int { return exhaustStates })
}
