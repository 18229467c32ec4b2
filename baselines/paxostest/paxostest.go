// Package paxostest holds test helpers the baselines
// (baselines/shardedpaxos, baselines/rspaxos) share.
package paxostest

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/check/baselines"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
)

// GroupsOf lists, in order, the groups (shards) the scripts touch.
func GroupsOf(l erasure.Layout, scripts [][][]msg.Op) []int {
	var gs []int
	for _, sc := range scripts {
		for _, txn := range sc {
			for _, op := range txn {
				if g := l.Shard(op.Block); !slices.Contains(gs, g) {
					gs = append(gs, g)
				}
			}
		}
	}
	slices.Sort(gs)
	return gs
}

// Sim is one randomized run of a baseline in the checker's simulator; what
// differs between the baselines comes as functions.
type Sim struct {
	Seed       uint64
	Loss, Dup  float64
	Crash      bool // crash the leader of a touched group at a random point
	CheckEvery int  // check Invariants every so many steps (0: at the end only)
	Ops        int  // operations the complete history holds
	Layout     erasure.Layout
	Groups     []int // the groups the scripts touch
	Invariants func(*mc.State) error
	LeaderOf   func(s *mc.State, g int) (node.Addr, bool)
	Settled    func(*mc.State) bool
}

// Run runs the clients to the end (crashing a leader on the way with
// Crash), checks that every reply w saw agrees, that the invariants hold
// and that the history is linearizable, then lets the replicas settle
// without loss. It returns the settled state, the steps taken and the
// crashed replica ("" if none).
func (r Sim) Run(t *testing.T, s *mc.State, rng *rand.Rand, w *baselines.ReplyWatcher) (*mc.State, int, node.Addr) {
	t.Helper()
	s.Observe(w.Observe)
	check := func(st mc.Step) error {
		if w.Err != nil {
			return w.Err
		}
		if r.CheckEvery > 0 && st.N%r.CheckEvery == 0 {
			return r.Invariants(st.After)
		}
		return nil
	}
	opt := mc.SimOptions{Seed: r.Seed, MaxSteps: 400000, Loss: r.Loss, Dup: r.Dup, TimerChance: 0.02}
	var (
		err     error
		n       int
		steps   int
		crashed node.Addr
	)
	if r.Crash {
		at := 30 + rng.IntN(400)
		k := 0
		s, n, err = mc.Simulate(s, opt, func(*mc.State) bool { k++; return k > at }, check)
		if err != nil {
			t.Fatalf("seed %d: %v", r.Seed, err)
		}
		steps += n
		g := r.Groups[rng.IntN(len(r.Groups))]
		if a, ok := r.LeaderOf(s, g); ok {
			if s, err = s.Apply(mc.Event{Kind: mc.Crash, Node: a}); err != nil {
				t.Fatalf("seed %d: crash %s: %v", r.Seed, a, err)
			}
			crashed = a
		}
		opt.Seed ^= 0x5eed
	}
	s, n, err = mc.Simulate(s, opt, baselines.ClientsDone, check)
	steps += n
	if err != nil {
		t.Fatalf("seed %d: %v", r.Seed, err)
	}
	if !baselines.ClientsDone(s) {
		t.Fatalf("seed %d: clients not done after %d steps", r.Seed, steps)
	}
	if err := r.Invariants(s); err != nil {
		t.Fatalf("seed %d: %v", r.Seed, err)
	}
	hist := baselines.History(s, true)
	if len(hist) != r.Ops {
		t.Fatalf("seed %d: %d operations in the history, want %d", r.Seed, len(hist), r.Ops)
	}
	if res, _ := porcupine.CheckOperationsVerbose(workload.Model(r.Layout), hist, 10*time.Second); res != porcupine.Ok {
		t.Fatalf("seed %d: history is %s, not linearizable:%s", r.Seed, res, baselines.Describe(hist))
	}
	// Let the followers catch up and the log be collected, without loss.
	settle := mc.SimOptions{Seed: r.Seed + 1, MaxSteps: 200000, TimerChance: 0.05}
	s, n, err = mc.Simulate(s, settle, r.Settled, check)
	steps += n
	if err != nil {
		t.Fatalf("seed %d: settling: %v", r.Seed, err)
	}
	if err := r.Invariants(s); err != nil {
		t.Fatalf("seed %d: %v", r.Seed, err)
	}
	return s, steps, crashed
}
