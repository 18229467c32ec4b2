//go:build mutants

package shardedpaxos_test

import (
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/mc"
)

// TestThesisBugFound injects the bug of thesis 4.2 (phase 2 replies carry
// only the value, and the leader counts them whatever ballot they answer)
// and checks that the guided search finds two values chosen for one slot
// within thesisPhaseStates states a phase (about 51,200 states in all,
// with one worker). The time it took is logged, not asserted (DSLabs
// reports 18 s for its guided test; docs/model-checking.md compares).
func TestThesisBugFound(t *testing.T) {
	paxos.Mutant = paxos.MutantP2bValueOnly
	defer func() { paxos.Mutant = "" }()
	start := time.Now()
	r := mc.RunGuided(thesisInit(), thesisPlan(9, thesisPhaseStates), mc.Options{Workers: 1})
	took := time.Since(start)
	if r.Outcome != mc.Violation {
		t.Fatalf("guided search ended %s after %d states in %v without finding the bug (%s)", r.Outcome, r.States, took, r.Explanation)
	}
	if !strings.Contains(r.Explanation, "is chosen") {
		t.Fatalf("found %s: %s; want two values chosen for one slot", r.Predicate, r.Explanation)
	}
	var b strings.Builder
	mc.PrintTrace(&b, thesisInit(), r.Trace, nil)
	t.Logf("trace:\n%s", b.String())
	t.Logf("found the thesis 4.2 bug in %v (%d states, trace of %d steps): %s: %s",
		took.Round(time.Millisecond), r.States, len(r.Trace), r.Predicate, r.Explanation)
}
