//go:build mutants

package check

import (
	"testing"
	"time"
)

// maxRecoveryRuns bounds the seeded runs TestRecoveryMutants tries per
// mutant.
const maxRecoveryRuns = 600

// recoveryMutants are bugs in replacement and recovery (thesis 3.3.2)
// and the randomized runs that find them (nil: replaceSeed).
var recoveryMutants = []struct {
	name string
	run  func(seed int) replaceRun
}{
	{"chain-keeps-gaps", nil},
	{"quorum-one-short", nil},
	{"no-fence", nil},
	{"install-chain-only", nil},
	{"snapshot-first-marker", nil},
	{"snapshot-copy-frozen", nil},
	{"serve-degraded", nil},
	// The rebuild-pause runs find this one much sooner than replaceSeed.
	{"snapshot-answer-uncommitted", pauseSeed},
	// Multi-stripe snapshot runs (runSeed) reach both copy-on-write
	// mutants.
	{"snapshot-cow-shared", runSeed},
	{"snapshot-mixed-cuts", runSeed},
	// The service replaces a server of a stripe that already has f
	// degraded blocks (SLC, thesis 3.4.2): pauseSeed's even seeds replace
	// two data servers and suspect a parity server of their stripes.
	{"ignore-slc", pauseSeed},
}

// TestRecoveryMutants looks for each mutant's violation with the
// randomized replacement runs (replaceSeed: loss, duplication, one or two
// data server replacements, live or crashed; pauseSeed adds a parity
// server suspected with them), which reach the deep states of recovery
// faster than the scenario searches. The correct protocol passes the same
// runs (TestRandomizedReplaceData, TestRandomizedReplaceTwoDataServers and
// TestRandomizedReplaceWithRebuildPause). Each must be found within
// maxRecoveryRuns seeded runs: a count, not a time, so a loaded machine
// gives the same answer (the slowest need under 200 runs, well under a
// minute on the shared 2-core machine).
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
			for seed := 1; seed <= maxRecoveryRuns; seed++ {
				if _, err := run(seed).try(); err != nil {
					t.Logf("%s found after %v (%d runs): %.300s", c.name, time.Since(start).Round(time.Millisecond), seed, err)
					return
				}
			}
			t.Fatalf("%s not found in %d runs (%v)", c.name, maxRecoveryRuns, time.Since(start).Round(time.Second))
		})
	}
}

// TestRecoveryMutantsBySearch: the search Mutants names for each recovery
// mutant (the one mc run --mutant runs) finds it within 60 s, with a
// replayable trace; the unmutated protocol passes 5 s of each scenario's
// same search.
func TestRecoveryMutantsBySearch(t *testing.T) {
	searchMutants(t, "recovery", 1, func(Mutant) time.Duration { return 5 * time.Second })
}
