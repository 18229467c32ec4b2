package shardedpaxos_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/baselines/paxostest"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/check/baselines"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
)

// build returns the initial state: the replicas of the touched groups and
// one client per script at "client/i" with id i+1.
func build(cfg shardedpaxos.Config, scripts [][][]msg.Op) (*mc.State, []int) {
	groups := paxostest.GroupsOf(cfg.Layout, scripts)
	nodes := shardedpaxos.Nodes(cfg, groups)
	for i, sc := range scripts {
		nodes[msg.ClientAddr(i)] = shardedpaxos.NewClient(uint64(i+1), cfg, sc)
	}
	return baselines.NewState(nodes), groups
}

// replicas lists the replicas in s.
func replicas(s *mc.State) []*shardedpaxos.Replica {
	var out []*shardedpaxos.Replica
	for _, a := range s.Addrs() {
		if r, ok := s.Node(a).(*shardedpaxos.Replica); ok {
			out = append(out, r)
		}
	}
	return out
}

// slots collects every member's log for baselines.OneValuePerSlot.
// Crashed members count: their acceptances happened.
func slots(s *mc.State) []baselines.Slot[shardedpaxos.Ballot, shardedpaxos.ID] {
	return baselines.ShardedPaxosSlots(s)
}

// invariants checks the Paxos and garbage-collection invariants of s.
func invariants(s *mc.State, cfg shardedpaxos.Config) error {
	if why := baselines.OneValuePerSlot(slots(s), cfg.Quorum()); why != "" {
		return fmt.Errorf("one value per slot: %s", why)
	}
	// A slot is discarded only once every full replica applied it.
	minApplied := map[int]uint64{}
	for _, r := range replicas(s) {
		if r.Full() {
			if a, ok := minApplied[r.Group()]; !ok || r.Applied() < a {
				minApplied[r.Group()] = r.Applied()
			}
		}
	}
	for _, r := range replicas(s) {
		if r.GC() > minApplied[r.Group()] {
			return fmt.Errorf("group %d member %d discarded its log up to slot %d, but a full replica applied only %d",
				r.Group(), r.Member(), r.GC(), minApplied[r.Group()])
		}
	}
	// At most one active leader per ballot (ballots name their leader).
	for _, r := range replicas(s) {
		if b, ok := r.Leading(); ok && b.Leader != r.Member() {
			return fmt.Errorf("group %d member %d leads ballot %v of member %d", r.Group(), r.Member(), b, b.Leader)
		}
	}
	return nil
}

// leaderOf returns the address of group g's live active leader with the
// highest ballot, if any.
func leaderOf(s *mc.State, cfg shardedpaxos.Config, g int) (node.Addr, bool) {
	var best node.Addr
	var bestBal shardedpaxos.Ballot
	found := false
	for i := 0; i < cfg.Full(); i++ {
		a := cfg.Addr(g, i)
		r, ok := s.Node(a).(*shardedpaxos.Replica)
		if !ok || s.Crashed(a) {
			continue
		}
		if b, ok := r.Leading(); ok && (!found || bestBal.Less(b)) {
			best, bestBal, found = a, b, true
		}
	}
	return best, found
}

// settled holds when, in every group, every live full replica applied the
// same prefix and, if no full replica crashed, every live member
// discarded its log up to it.
func settled(s *mc.State, cfg shardedpaxos.Config, groups []int) bool {
	for _, g := range groups {
		var applied []uint64
		crashedFull := false
		for i := 0; i < cfg.Full(); i++ {
			a := cfg.Addr(g, i)
			if s.Crashed(a) {
				crashedFull = true
				continue
			}
			applied = append(applied, s.Node(a).(*shardedpaxos.Replica).Applied())
		}
		if slices.Min(applied) != slices.Max(applied) {
			return false
		}
		if crashedFull {
			continue
		}
		for i := 0; i < cfg.Members(); i++ {
			a := cfg.Addr(g, i)
			if !s.Crashed(a) && s.Node(a).(*shardedpaxos.Replica).GC() != applied[0] {
				return false
			}
		}
	}
	return true
}

type simRun struct {
	layout       erasure.Layout
	clients, ops int
	blocks       uint64 // blocks the workload touches (0: all)
	loss, dup    float64
	seed         uint64
	crash        bool // crash a group's leader mid-run
	checkEvery   int
}

type simResult struct {
	steps, elections int
	crashed          node.Addr
}

func (r simRun) run(t *testing.T) simResult {
	t.Helper()
	cfg := shardedpaxos.Config{Layout: r.layout}
	rng := rand.New(rand.NewPCG(r.seed, 11))
	scripts := make([][][]msg.Op, r.clients)
	for i := range scripts {
		scripts[i] = workload.Generate(rng.Uint64, r.layout, r.blocks, r.ops, workload.DefaultMix)
	}
	s, groups := build(cfg, scripts)
	var res simResult
	sim := paxostest.Sim{
		Seed: r.seed, Loss: r.loss, Dup: r.dup, Crash: r.crash, CheckEvery: r.checkEvery,
		Ops: r.clients * r.ops, Layout: r.layout, Groups: groups,
		Invariants: func(s *mc.State) error { return invariants(s, cfg) },
		LeaderOf:   func(s *mc.State, g int) (node.Addr, bool) { return leaderOf(s, cfg, g) },
		Settled:    func(s *mc.State) bool { return settled(s, cfg, groups) },
	}
	// The replicas' blocks agree once settled.
	s, res.steps, res.crashed = sim.Run(t, s, rng, baselines.NewReplyWatcher())
	for _, g := range groups {
		var ref *shardedpaxos.Replica
		for i := 0; i < cfg.Full(); i++ {
			a := cfg.Addr(g, i)
			if s.Crashed(a) {
				continue
			}
			rep := s.Node(a).(*shardedpaxos.Replica)
			if ref == nil {
				ref = rep
				continue
			}
			for _, b := range r.layout.ShardBlocks(g) {
				if !bytes.Equal(ref.Block(b), rep.Block(b)) {
					t.Fatalf("seed %d: group %d block %d differs between members %d and %d after applying slot %d",
						r.seed, g, b, ref.Member(), rep.Member(), rep.Applied())
				}
			}
		}
	}
	for _, rep := range replicas(s) {
		if b, ok := rep.Leading(); ok && b.Round > 0 {
			res.elections++
		}
	}
	return res
}

func seeds(t *testing.T, full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

func TestRandomized(t *testing.T) {
	cases := []struct {
		name   string
		layout erasure.Layout
		blocks uint64
		seeds  int
	}{
		// f=1: 2 full replicas and 1 witness per group, 3 groups.
		{"f1", erasure.Layout{N: 3, G: 2, F: 1, Stripes: 3, BlockSize: 16}, 0, 300},
		// f=2: 3 full replicas and 2 witnesses per group, 2 groups touched.
		{"f2", erasure.Layout{N: 5, G: 3, F: 2, Stripes: 2, BlockSize: 16}, 2, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := seeds(t, c.seeds, c.seeds/5)
			steps, crashes := 0, 0
			for seed := 1; seed <= n; seed++ {
				res := simRun{layout: c.layout, clients: 3, ops: 15, blocks: c.blocks, loss: 0.1, dup: 0.1,
					seed: uint64(seed), crash: seed%2 == 0, checkEvery: 5}.run(t)
				steps += res.steps
				if res.crashed != "" {
					crashes++
				}
			}
			t.Logf("%d seeds (%d with a leader crashed), 3 clients x 15 transactions, 10%% loss, 10%% duplication: linearizable, one value per slot; %d steps in all",
				n, crashes, steps)
		})
	}
}
