package shardedpaxos_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/amalgam-store/amalgam/baselines/paxostest"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/check/baselines"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/mc/mctest"
	"github.com/amalgam-store/amalgam/msg"
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

type simRun struct {
	layout       erasure.Layout
	clients, ops int
	blocks       uint64 // blocks the workload touches (0: all)
	seed         uint64
	crash        bool // crash a group's leader mid-run
}

// run runs the clients' random transactions with 10% loss and 10%
// duplication, then checks that the settled full replicas' blocks agree.
func (r simRun) run(t *testing.T) (steps int, crashed bool) {
	t.Helper()
	cfg := shardedpaxos.Config{Layout: r.layout}
	rng := rand.New(rand.NewPCG(r.seed, 11))
	scripts := make([][][]msg.Op, r.clients)
	for i := range scripts {
		scripts[i] = workload.Generate(rng.Uint64, r.layout, r.blocks, r.ops, workload.DefaultMix)
	}
	s, groups := build(cfg, scripts)
	sim := paxostest.Sim[shardedpaxos.ID, *shardedpaxos.Replica]{Seed: r.seed, Loss: 0.1, Dup: 0.1, Crash: r.crash, CheckEvery: 5,
		Ops: r.clients * r.ops, Layout: r.layout, Config: cfg, Groups: groups}
	s, steps, crashedAt := sim.Run(t, s, rng, baselines.NewReplyWatcher())
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
	return steps, crashedAt != ""
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
			n, steps, crashes := paxostest.Seeds(c.seeds, *mctest.Long, func(seed uint64, crash bool) (int, bool) {
				return simRun{layout: c.layout, clients: 3, ops: 15, blocks: c.blocks, seed: seed, crash: crash}.run(t)
			})
			t.Logf("%d seeds (%d with a leader crashed), 3 clients x 15 transactions, 10%% loss, 10%% duplication: linearizable, one value per slot; %d steps in all",
				n, crashes, steps)
		})
	}
}
