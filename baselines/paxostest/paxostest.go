// Package paxostest holds test helpers the baselines
// (baselines/shardedpaxos, baselines/rspaxos) share.
package paxostest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/baselines/paxos"
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

// Config is what the harness needs of a baseline's deployment.
type Config interface {
	Members() int
	Quorum() int
	Addr(g, i int) node.Addr
}

// Sim is one randomized run of a baseline in the checker's simulator, whose
// replicas are of type R, with IDs of type I.
type Sim[I comparable, R baselines.Replica[I]] struct {
	Seed       uint64
	Loss, Dup  float64
	Crash      bool // crash the leader of a touched group at a random point
	CheckEvery int  // check the invariants every so many steps (0: at the end only)
	Ops        int  // operations the complete history holds
	Layout     erasure.Layout
	Config     Config
	Groups     []int // the groups the scripts touch
}

// Seeds runs run with seeds 1..n when long (the tests pass -long,
// mctest.Long), 1..n/3 otherwise and 1..n/5 with -short, crashing a
// leader in every other run, and returns the number of runs, the steps
// they took and the number of runs in which a leader crashed.
func Seeds(n int, long bool, run func(seed uint64, crash bool) (steps int, crashed bool)) (runs, steps, crashes int) {
	switch {
	case testing.Short():
		n /= 5
	case !long:
		n /= 3
	}
	for seed := 1; seed <= n; seed++ {
		st, crashed := run(uint64(seed), seed%2 == 0)
		steps += st
		if crashed {
			crashes++
		}
	}
	return n, steps, crashes
}

// Invariants checks one value per slot, that no member discarded a slot a
// full replica of its group has not applied, and that every active leader
// leads a ballot of its own (ballots name their leader).
func (r Sim[I, R]) Invariants(s *mc.State) error {
	if why := baselines.OneValuePerSlot(baselines.LogSlots[I, R](s), r.Config.Quorum()); why != "" {
		return fmt.Errorf("one value per slot: %s", why)
	}
	reps := baselines.Replicas[R](s)
	minApplied := map[int]uint64{}
	for _, m := range reps {
		if m.Full() {
			if a, ok := minApplied[m.Group()]; !ok || m.Applied() < a {
				minApplied[m.Group()] = m.Applied()
			}
		}
	}
	for _, m := range reps {
		if m.GC() > minApplied[m.Group()] {
			return fmt.Errorf("group %d member %d discarded its log up to slot %d, but a full replica applied only %d",
				m.Group(), m.Member(), m.GC(), minApplied[m.Group()])
		}
		if b, ok := m.Leading(); ok && b.Leader != m.Member() {
			return fmt.Errorf("group %d member %d leads ballot %v of member %d", m.Group(), m.Member(), b, b.Leader)
		}
	}
	return nil
}

// leaderOf returns the address of group g's live active leader with the
// highest ballot, if any.
func (r Sim[I, R]) leaderOf(s *mc.State, g int) (node.Addr, bool) {
	var best node.Addr
	var bestBal paxos.Ballot
	found := false
	for i := 0; i < r.Config.Members(); i++ {
		a := r.Config.Addr(g, i)
		m, ok := s.Node(a).(R)
		if !ok || s.Crashed(a) || !m.Full() {
			continue
		}
		if b, ok := m.Leading(); ok && (!found || bestBal.Less(b)) {
			best, bestBal, found = a, b, true
		}
	}
	return best, found
}

// settled holds when, in every touched group, every live full replica
// applied the same prefix and, if no full replica crashed, every live
// member discarded its log up to it.
func (r Sim[I, R]) settled(s *mc.State) bool {
	for _, g := range r.Groups {
		var applied []uint64
		crashedFull := false
		for i := 0; i < r.Config.Members(); i++ {
			a := r.Config.Addr(g, i)
			if !s.Node(a).(R).Full() {
				continue
			}
			if s.Crashed(a) {
				crashedFull = true
				continue
			}
			applied = append(applied, s.Node(a).(R).Applied())
		}
		if slices.Min(applied) != slices.Max(applied) {
			return false
		}
		if crashedFull {
			continue
		}
		for i := 0; i < r.Config.Members(); i++ {
			a := r.Config.Addr(g, i)
			if !s.Crashed(a) && s.Node(a).(R).GC() != applied[0] {
				return false
			}
		}
	}
	return true
}

// Run runs the clients to the end (crashing a leader on the way with
// Crash), checks that every reply w saw agrees, that the invariants hold
// and that the history is linearizable, then lets the replicas settle
// without loss. It returns the settled state, the steps taken and the
// crashed replica ("" if none).
func (r Sim[I, R]) Run(t *testing.T, s *mc.State, rng *rand.Rand, w *baselines.ReplyWatcher) (*mc.State, int, node.Addr) {
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
		if a, ok := r.leaderOf(s, g); ok {
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
	// No timeout: the history is r.Ops operations, and one that ran out
	// would report Unknown, a failure that depends on the machine's load.
	if res, _ := porcupine.CheckOperationsVerbose(workload.Model(r.Layout), hist, 0); res != porcupine.Ok {
		t.Fatalf("seed %d: history is %s, not linearizable:%s", r.Seed, res, baselines.Describe(hist))
	}
	// Let the followers catch up and the log be collected, without loss.
	settle := mc.SimOptions{Seed: r.Seed + 1, MaxSteps: 200000, TimerChance: 0.05}
	s, n, err = mc.Simulate(s, settle, r.settled, check)
	steps += n
	if err != nil {
		t.Fatalf("seed %d: settling: %v", r.Seed, err)
	}
	if err := r.Invariants(s); err != nil {
		t.Fatalf("seed %d: %v", r.Seed, err)
	}
	return s, steps, crashed
}
