package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// TestMemoAndScratchSound: reusing handler results and building
// successors in scratch buffers change nothing for Amalgam's nodes: the
// same scenarios give the same state counts with handlers run afresh on
// every transition.
func TestMemoAndScratchSound(t *testing.T) {
	for _, sc := range []*Scenario{Normal, NormalLossy, SameShard, Witnesses, CrashData} {
		a := sc.Run(mc.BFS, mc.Options{NoMemo: true})
		b := sc.Run(mc.BFS, mc.Options{})
		if a.Outcome != mc.Exhausted || b.Outcome != mc.Exhausted || a.States != b.States {
			t.Fatalf("%s: without reuse %s %d states, with %s %d", sc.Name, a.Outcome, a.States, b.Outcome, b.States)
		}
	}
}

// TestIncrementalFingerprint walks random paths of Amalgam clusters (with
// drops, duplicates, timers and crashes) and searches them breadth-first
// (building states in scratch buffers), checking after every step that
// the incrementally kept fingerprint equals a computation from scratch,
// that a clone of the changed node hashes like it, and that applying the
// event again gives the same state (mc.Checks).
func TestIncrementalFingerprint(t *testing.T) {
	set := mc.Settings{MaxDrops: mc.Unlimited, MaxDuplicates: mc.Unlimited, MaxTimerFires: mc.Unlimited, MaxCrashes: 2}
	checks := mc.Checks{Determinism: true, CloneHash: true}
	for _, sc := range []*Scenario{TwoClients, Witnesses, Txn, CrashBackupWitness} {
		o := sc.Options(mc.Random)
		o.Settings, o.Checks, o.Seed, o.Walks, o.MaxDepth, o.Invariants = set, checks, 5, 20, 60, nil
		if r := mc.Search(sc.Init(), o); r.Outcome != mc.WalksDone {
			t.Fatalf("%s random: %s (%s: %s)", sc.Name, r.Outcome, r.Predicate, r.Explanation)
		}
		o = sc.Options(mc.BFS)
		o.Settings, o.Checks, o.MaxStates, o.Invariants = set, checks, 3000, nil
		if r := mc.Search(sc.Init(), o); r.Outcome != mc.StateLimit && r.Outcome != mc.Exhausted {
			t.Fatalf("%s bfs: %s (%s: %s)", sc.Name, r.Outcome, r.Predicate, r.Explanation)
		}
	}
}
