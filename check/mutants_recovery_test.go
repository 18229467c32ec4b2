//go:build mutants

package check

import (
	"testing"
	"time"
)

// maxRecoveryRuns bounds the seeded runs TestRecoveryMutants tries per
// mutant.
const maxRecoveryRuns = 600

// recoveryMutants are bugs in replacement and recovery (thesis 3.3.2),
// the randomized runs that find them (nil: replaceSeed) and the lowest
// seed of those runs that found each, measured on the tree that set it.
var recoveryMutants = []struct {
	name  string
	run   func(seed int) replaceRun
	first int
}{
	{"chain-keeps-gaps", nil, 188},
	{"quorum-one-short", nil, 2},
	{"no-fence", nil, 102},
	{"install-chain-only", nil, 137},
	{"snapshot-first-marker", nil, 56},
	{"snapshot-copy-frozen", nil, 19},
	{"serve-degraded", nil, 2},
	// The rebuild-pause runs find this one much sooner than replaceSeed.
	{"snapshot-answer-uncommitted", pauseSeed, 42},
	// Multi-stripe snapshot runs (runSeed) reach both copy-on-write
	// mutants.
	{"snapshot-cow-shared", runSeed, 2},
	{"snapshot-mixed-cuts", runSeed, 66},
	// The service replaces a server of a stripe that already has f
	// degraded blocks (SLC, thesis 3.4.2): pauseSeed's even seeds replace
	// two data servers and suspect a parity server of their stripes.
	{"ignore-slc", pauseSeed, 4},
}

// TestRecoveryMutants looks for each mutant's violation with the
// randomized replacement runs (replaceSeed: loss, duplication, one or two
// data server replacements, live or crashed; pauseSeed adds a parity
// server suspected with them), which reach the deep states of recovery
// faster than the scenario searches. The correct protocol passes the same
// runs (TestRandomizedReplaceData, TestRandomizedReplaceTwoDataServers and
// TestRandomizedReplaceWithRebuildPause). Each must be found within
// maxRecoveryRuns seeded runs (seeds 1 to maxRecoveryRuns): a count, not a
// time, so a loaded machine gives the same answer. The runs try the seeds
// starting at the one that found the mutant when it was measured (first),
// then the rest in order, wrapping around: the assertion, some seed up to
// maxRecoveryRuns finds it, is the same as trying them from 1, and CI
// does not rerun the up to 187 seeds before it that find nothing.
func TestRecoveryMutants(t *testing.T) {
	for _, c := range recoveryMutants {
		t.Run(c.name, func(t *testing.T) {
			if err := SetMutant(c.name); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = SetMutant("") }()
			run := c.run
			if run == nil {
				run = replaceSeed
			}
			start := time.Now()
			for i := range maxRecoveryRuns {
				seed := (c.first-1+i)%maxRecoveryRuns + 1
				if _, err := run(seed).try(); err != nil {
					t.Logf("%s found by seed %d after %v (%d runs): %.300s", c.name, seed, time.Since(start).Round(time.Millisecond), i+1, err)
					return
				}
			}
			t.Fatalf("%s not found in %d runs (%v)", c.name, maxRecoveryRuns, time.Since(start).Round(time.Second))
		})
	}
}

// TestRecoveryMutantsBySearch: the search Mutants names for each recovery
// mutant (the one mc run --mutant runs) finds it within mutantBound
// states, with a replayable trace; the unmutated protocol passes the same
// search as far as the mutant's went (asFar).
func TestRecoveryMutantsBySearch(t *testing.T) {
	searchMutants(t, "recovery", 1, asFar)
}
