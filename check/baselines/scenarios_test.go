package baselines

import (
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/mc/mctest"
)

// TestScenarios searches every baseline scenario and requires no
// violation: breadth-first to exhaustion for the small ones; for the
// others breadth-first up to DefaultStates (LongStates under -long; no
// outcome required but the absence of a violation),
// then 3000 random walks to the end of the clients' scripts. Both are
// bounded by states or walks, not by time, so a busy machine searches
// the same. Each is paired with a progress search (thesis
// 4.3.3.1): without failures, a state where every client has all its
// replies must be reachable, so the safety searches are not vacuous.
func TestScenarios(t *testing.T) {
	// The scenarios whose whole state graph BFS explores in seconds, with
	// their exact counts of distinct states.
	exhaustive := map[*mc.Scenario]int{ShardedPaxosNormal: 557_876, RSPaxosNormal: 113_170}
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			o := sc.Options(mc.BFS)
			o.Settings = mc.Settings{}
			o.MaxDepth = 0
			o.Goals = []mc.Predicate{mc.ClientsDonePred()}
			// A state bound, not a time bound, so a busy machine cannot fail
			// it: the goal is found within about 22,000 states.
			o.MaxStates, o.Workers = 1_000_000, 2
			p := mc.Search(sc.Init(), o)
			if p.Outcome != mc.GoalFound {
				t.Fatalf("progress: %s after %d states (%s: %s)", p.Outcome, p.States, p.Predicate, p.Explanation)
			}
			limit := DefaultStates
			if *mctest.Long {
				limit = LongStates
			}
			want, small := exhaustive[sc]
			if small {
				limit = 0
			}
			r := sc.Run(mc.BFS, mc.Options{Workers: 2, MaxStates: limit})
			fail(t, sc, r)
			if small && (r.Outcome != mc.Exhausted || r.States != want) {
				t.Fatalf("BFS ended %s after %d states, want exhausted after exactly %d", r.Outcome, r.States, want)
			}
			t.Logf("%s: clients done in %d steps at best; BFS: %s, %d states, depth %d, %v (%.0f states/s)",
				sc.Doc, len(p.Trace), r.Outcome, r.States, r.MaxDepth, r.Elapsed.Round(time.Millisecond), r.StatesPerSecond())
			if small {
				return
			}
			w := sc.Run(mc.Random, mc.Options{Workers: 2, Seed: 1, Walks: 3000, MaxDepth: 80})
			fail(t, sc, w)
			t.Logf("random walks: %s, %d states, depth %d, %v", w.Outcome, w.States, w.MaxDepth, w.Elapsed.Round(time.Millisecond))
		})
	}
}

func fail(t *testing.T, sc *mc.Scenario, r *mc.Result) {
	t.Helper()
	if r.Outcome == mc.Violation {
		var b strings.Builder
		sc.PrintTrace(&b, r.Trace)
		t.Fatalf("violation of %s: %s\n%s", r.Predicate, r.Explanation, b.String())
	}
}

// TestSelfChecks runs the checker's self-checks (thesis 4.3.1.2) on the
// baselines: every event applied twice gives the same state (handlers are
// deterministic), and a clone hashes like its original (Clone and Hash
// agree, copy-on-write state included).
func TestSelfChecks(t *testing.T) {
	for _, sc := range []*mc.Scenario{ShardedPaxosLossy, RSPaxosLossy} {
		r := sc.Run(mc.BFS, mc.Options{Workers: 2, MaxStates: 30000,
			Checks: mc.Checks{Determinism: true, CloneHash: true, Idempotence: true}})
		fail(t, sc, r)
		t.Logf("%s: %s after %d states; handlers not idempotent: %v", sc.Name, r.Outcome, r.States, r.Idempotence)
	}
}
