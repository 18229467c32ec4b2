package mc

import (
	"math/rand/v2"
	"testing"
)

// TestMemoAndScratchSound: reusing handler results and building
// successors in scratch buffers change nothing: the same scenarios give
// the same state counts with handlers run afresh on every transition,
// and DFS (which also builds in scratch) agrees.
func TestMemoAndScratchSound(t *testing.T) {
	for _, sc := range []*Scenario{Normal, NormalLossy, SameShard, Witnesses, CrashData} {
		fresh := sc.Init()
		fresh.sys.noMemo = true
		a := Search(fresh, sc.Options(BFS))
		b := Search(sc.Init(), sc.Options(BFS))
		if a.Outcome != Exhausted || b.Outcome != Exhausted || a.States != b.States {
			t.Fatalf("%s: without reuse %s %d states, with %s %d", sc.Name, a.Outcome, a.States, b.Outcome, b.States)
		}
	}
}

// TestIncrementalFingerprint walks random paths (with drops, duplicates,
// timers and crashes) and checks after every step that the incrementally
// kept fingerprint parts equal a computation from scratch, for states
// built directly and in scratch buffers.
func TestIncrementalFingerprint(t *testing.T) {
	set := Settings{MaxDrops: Unlimited, MaxDuplicates: Unlimited, MaxTimerFires: Unlimited, MaxCrashes: 2}
	for _, sc := range []*Scenario{TwoClients, Witnesses, Txn, CrashBackupWitness} {
		for seed := uint64(1); seed <= 20; seed++ {
			rng := rand.New(rand.NewPCG(seed, 5))
			s := sc.Init()
			var scr scratch
			for step := 0; step < 60; step++ {
				evs := s.Events(set)
				if len(evs) == 0 {
					break
				}
				e := evs[rng.IntN(len(evs))]
				next, err := s.Apply(e)
				if err != nil {
					t.Fatalf("%s seed %d step %d: %v", sc.Name, seed, step, err)
				}
				if err := next.checkSums(); err != nil {
					t.Fatalf("%s seed %d step %d (%v): %v", sc.Name, seed, step, e, err)
				}
				in, err := s.applyScratch(e, &scr)
				if err != nil || in.fp != next.fp {
					t.Fatalf("%s seed %d step %d (%v): scratch state differs (%v)", sc.Name, seed, step, e, err)
				}
				if fz := scr.freeze(); fz.fp != next.fp || fz.checkSums() != nil {
					t.Fatalf("%s seed %d step %d (%v): frozen state differs", sc.Name, seed, step, e)
				}
				s = next
			}
		}
	}
}
