package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc/mctest"
)

// sweep is the size of a randomized sweep: full under -long (mctest.Long:
// the full randomized sweeps, 1000 seeds per layout, and every strategy on
// crash-backup-witness; without it the package fits go test's default
// timeout on a busy 2-core machine; see docs/model-checking.md), short
// under -short, def otherwise.
func sweep(full, def, short int) int {
	switch {
	case *mctest.Long:
		return full
	case testing.Short():
		return short
	}
	return def
}
