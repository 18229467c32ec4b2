//go:build mutants

package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/reconfig"
)

// livenessMutants are the failure handling bugs, the scenario whose random
// walks find each, and the predicate that fails.
var livenessMutants = []struct {
	name string
	sc   *mc.Scenario
	pred string
}{
	// Two machines suspected in one round get the same spare.
	{"same-spare", FailoverTwo, "distinct spares"},
	// A resumed detector adds the paused time to every silence count (as
	// stale last-heard times do) and starts no grace.
	{"stale-after-resume", FailoverOne, "grace respected"},
	// A slot moves to a spare without its servers' replacement: it stays
	// on a host with no servers.
	{"move-without-replace", FailoverOne, "heals within 150 events"},
}

// TestLivenessMutants: random walks of the failover scenarios find each
// mutant within 60 s.
func TestLivenessMutants(t *testing.T) {
	for _, c := range livenessMutants {
		t.Run(c.name, func(t *testing.T) {
			reconfig.Mutant = c.name
			defer func() { reconfig.Mutant = "" }()
			start := time.Now()
			res := c.sc.Run(mc.Random, mc.Options{MaxTime: 60 * time.Second, Seed: 1})
			t.Logf("%s: %s after %v, %d states: %s", c.name, res.Outcome, time.Since(start).Round(time.Millisecond), res.States, res.Explanation)
			if res.Outcome != mc.Violation || res.Predicate != c.pred {
				t.Fatalf("%s not found: %s (%s)", c.name, res.Outcome, res.Predicate)
			}
		})
	}
}
