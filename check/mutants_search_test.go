//go:build mutants

package check

import (
	"fmt"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

// mutantNeeds is, for each mutant, what the mutant tests' searches were
// measured to need to find it, on the tree that set the numbers: states,
// the most distinct states any global search needed (the search Mutants
// names, with and without Settings.SkipNoOps, with and without sleep
// sets; BFS with two workers may count a few more or fewer from run to
// run, seeded random walks the same); local, the local states LMC needed
// (0: LMC is not run on it; its schedule, walks included, follows counts,
// not the clock, so every run needs the same).
var mutantNeeds = map[string]struct{ states, local int }{
	"commit-f-1":                  {6, 31},
	"commit-out-of-order":         {27, 33},
	"backlog-out-of-order":        {352, 21},
	"backlog-txn-first-stripe":    {84, 131},
	"txn-first-stripe":            {7, 24},
	"forget-result":               {161, 19},
	"retry-reexecutes":            {9, 16},
	"delta-new-value":             {481, 40},
	"delta-after-put":             {32, 20},
	"apply-twice":                 {32, 20},
	"wrong-coefficient":           {257, 52},
	"apply-on-prepare":            {3, 13},
	"witness-ack-without-holding": {7, 40},

	"data-no-opnum":           {102, 0},
	"data-no-blocks":          {120, 0},
	"data-no-clients":         {58, 0},
	"parity-no-prepares":      {144, 0},
	"parity-no-blocks":        {124, 0},
	"witness-no-prepares":     {120, 0},
	"release-before-durable":  {63, 0},
	"prepare-before-durable":  {10_085, 0},
	"ack-before-durable":      {138, 0},
	"snapshot-restart-recopy": {78_571, 0},
	"witness-no-fence":        {10_163, 0},

	"chain-keeps-gaps":            {2161, 110},
	"quorum-one-short":            {10_403, 1316},
	"no-fence":                    {2505, 610},
	"install-chain-only":          {8524, 933},
	"snapshot-first-marker":       {389, 128},
	"snapshot-copy-frozen":        {912, 127},
	"serve-degraded":              {109, 90},
	"snapshot-answer-uncommitted": {2611, 182},
	"held-old-config":             {160_200, 9824},
	"snapshot-cow-shared":         {291, 127},
	"snapshot-mixed-cuts":         {18_138, 298},
	"ignore-slc":                  {754, 111},

	"same-spare":           {622, 0},
	"stale-after-resume":   {668, 0},
	"move-without-replace": {14, 0},
}

// mutantBound is the state bound of a global search that must find mutant
// name, and lmcBound that of an LMC run: five times what it was measured
// to need (mutantNeeds), at least 1,000. A count, not a time, so a loaded
// machine gives the same answer, and a search that stops finding the
// mutant fails at the bound.
func mutantBound(t *testing.T, name string) int {
	t.Helper()
	return needBound(t, name, mutantNeeds[name].states)
}

func lmcBound(t *testing.T, name string) int {
	t.Helper()
	return needBound(t, name, mutantNeeds[name].local)
}

func needBound(t *testing.T, name string, n int) int {
	t.Helper()
	if n == 0 {
		t.Fatalf("no measured need for mutant %s: run its search without a bound and add what it needs to mutantNeeds", name)
	}
	return max(1000, 5*n)
}

// searchMutants runs, for each mutant of kind, the search Mutants names
// (with workers, bounded by mutantBound states): it must find the
// expected invariant, with a trace that replays. clean, if it returns a
// positive count, then runs the same search unmutated bounded by that
// many states (an identical search only once): it must find nothing.
func searchMutants(t *testing.T, kind string, workers int, clean func(m Mutant, found *mc.Result) int) {
	cleaned := map[string]bool{}
	for _, m := range Mutants() {
		if m.Kind != kind {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			sc, err := Registry().Lookup(m.Scenario)
			if err != nil {
				t.Fatal(err)
			}
			if err := SetMutant(m.Name); err != nil {
				t.Fatal(err)
			}
			r := sc.Run(m.Strategy, mc.Options{MaxStates: mutantBound(t, m.Name), Workers: workers, Seed: m.Seed})
			_ = SetMutant("")
			if r.Outcome != mc.Violation || r.Predicate != m.Finds {
				t.Fatalf("mutant not found on %s: %s (%q, expected %q) after %d states, %v", sc.Name, r.Outcome, r.Predicate, m.Finds,
					r.States, r.Elapsed)
			}
			if n := clean(m, r); n > 0 {
				key := fmt.Sprint(sc.Name, m.Strategy, m.Seed, n)
				if !cleaned[key] {
					cleaned[key] = true
					if c := sc.Run(m.Strategy, mc.Options{MaxStates: n, Workers: workers, Seed: m.Seed}); c.Outcome == mc.Violation {
						t.Fatalf("unmutated protocol violates %s on %s: %s", c.Predicate, sc.Name, c.Explanation)
					}
				}
			}
			if err := SetMutant(m.Name); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = SetMutant("") }()
			n := len(r.Trace)
			mc.Explain(sc, r)
			t.Logf("%s on %s: %q in %v, %d states, trace %d steps (%d before minimizing): %s", m.Name, sc.Name, r.Predicate,
				r.Elapsed.Round(time.Millisecond), r.States, len(r.Trace), n, r.Explanation)
			rp, err := mc.Replay(sc, mc.NewTraceFile(sc, r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Fatalf("replay: %v, predicate %q", err, rp.Predicate)
			}
		})
	}
}

// exhaustStates bounds the unmutated searches that exhaust their scenario
// (each has far fewer states): a count that only stops one that grew.
const exhaustStates = 1_000_000

// asFar is the clean search of searchMutants as far as the mutant's went:
// the states it visited before the violation.
func asFar(_ Mutant, found *mc.Result) int { return found.States }
