package check

import (
	"flag"
	"testing"
)

// long runs the full randomized sweeps and every strategy on the largest
// exhaustive scenario; without it the package fits go test's default
// timeout on a busy 2-core machine. See docs/model-checking.md.
var long = flag.Bool("long", false, "run the full randomized sweeps (1000 seeds per layout) and all strategies on crash-backup-witness")

// sweep is the size of a randomized sweep: full under -long, short under
// -short, def otherwise.
func sweep(full, def, short int) int {
	switch {
	case *long:
		return full
	case testing.Short():
		return short
	}
	return def
}
