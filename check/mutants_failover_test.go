//go:build mutants

package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// TestLivenessMutants: random walks of the failover scenarios (Mutants)
// find each failure handling mutant within mutantBound states.
// Run with: go test -tags mutants -run TestLivenessMutants -v ./check/
func TestLivenessMutants(t *testing.T) {
	searchMutants(t, "liveness", 1, func(Mutant, *mc.Result) int { return 0 })
}
