//go:build mutants

package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/reconfig"
)

// recoveryMutants are bugs in replacement and recovery (thesis 3.3.2), the
// randomized runs that find them (nil: replaceSeed), and the recovery
// scenario whose random-walk search also finds the mutant (nil: only the
// randomized runs find it within 60 s so far).
var recoveryMutants = []struct {
	name string
	set  func(string)
	sc   *Scenario
	run  func(seed int) replaceRun
}{
	{"chain-keeps-gaps", setReconfig, nil, nil},
	{"quorum-one-short", setReconfig, nil, nil},
	{"no-fence", setParity, ReplaceData, nil},
	{"install-chain-only", setParity, ReplaceData, nil},
	{"snapshot-first-marker", setParity, nil, nil},
	{"snapshot-copy-frozen", setParity, nil, nil},
	{"serve-degraded", setData, ReplaceData, nil},
	// The rebuild-pause runs find this one much sooner than replaceSeed.
	{"snapshot-answer-uncommitted", setData, nil, pauseSeed},
	// The service replaces a server of a stripe that already has f
	// degraded blocks (SLC, thesis 3.4.2): pauseSeed's even seeds replace
	// two data servers and suspect a parity server of their stripes.
	{"ignore-slc", setReconfig, SuspectDegradedStripe, pauseSeed},
}

func setReconfig(m string) { reconfig.Mutant = m }

var _ = data.Mutant
var _ = parity.Mutant

// TestRecoveryMutants looks for each mutant's violation with the
// randomized replacement runs (replaceSeed: loss, duplication, one or two
// data server replacements, live or crashed; pauseSeed adds a parity
// server suspected with them), which reach the deep states of recovery
// faster than the scenario searches. The correct protocol passes the same
// runs (TestRandomizedReplaceData, TestRandomizedReplaceTwoDataServers and
// TestRandomizedReplaceWithRebuildPause). Each must be found within 60 s.
func TestRecoveryMutants(t *testing.T) {
	for _, c := range recoveryMutants {
		t.Run(c.name, func(t *testing.T) {
			c.set(c.name)
			defer c.set("")
			run := c.run
			if run == nil {
				run = replaceSeed
			}
			start := time.Now()
			for seed := 1; time.Since(start) < 60*time.Second; seed++ {
				if _, err := run(seed).try(); err != nil {
					t.Logf("%s found after %v (%d runs): %.300s", c.name, time.Since(start).Round(time.Millisecond), seed, err)
					return
				}
			}
			t.Fatalf("%s not found in 60 s", c.name)
		})
	}
}

// TestRecoveryMutantsBySearch: some recovery mutants are also found by a
// seeded random-walk search of the recovery scenarios, with a replayable
// trace.
func TestRecoveryMutantsBySearch(t *testing.T) {
	for _, c := range recoveryMutants {
		if c.sc == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			c.set(c.name)
			defer c.set("")
			r := c.sc.Run(mc.Random, mc.Options{MaxTime: 60 * time.Second, Seed: 1})
			if r.Outcome != mc.Violation {
				t.Fatalf("mutant not found on %s: %s after %d states, %v", c.sc.Name, r.Outcome, r.States, r.Elapsed)
			}
			t.Logf("%s on %s: %q in %v, %d states, trace %d steps", c.name, c.sc.Name, r.Predicate,
				r.Elapsed.Round(time.Millisecond), r.States, len(r.Trace))
			rp, err := mc.Replay(c.sc.MC(), mc.NewTraceFile(c.sc.MC(), r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Fatalf("replay: %v, predicate %q", err, rp.Predicate)
			}
		})
	}
}
