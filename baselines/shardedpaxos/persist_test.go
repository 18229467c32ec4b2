package shardedpaxos_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/baselines/paxostest"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
	"github.com/amalgam-store/amalgam/workload"
)

// persistConfig is the deployment the persistence tests run: 3 groups of
// 2 full replicas and a witness.
var persistConfig = shardedpaxos.Config{Layout: erasure.Layout{N: 3, G: 2, F: 1, Stripes: 3, BlockSize: 16}}

// TestPersistRestore checks persistence with paxostest.CheckPersist: 12
// seeds of 3 groups and 3 clients of 15 random transactions each.
func TestPersistRestore(t *testing.T) {
	cfg := persistConfig
	var st paxostest.PersistStats
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		run := paxostest.PersistRun[shardedpaxos.ID, *shardedpaxos.Replica]{Seed: seed,
			Replicas: map[node.Addr]*shardedpaxos.Replica{}, Clients: map[node.Addr]paxostest.Client{},
			Fresh: func(r *shardedpaxos.Replica) *shardedpaxos.Replica {
				return shardedpaxos.NewReplica(cfg, r.Group(), r.Member())
			},
			SameApp: func(orig, restored *shardedpaxos.Replica) string {
				for b := range cfg.Layout.NumBlocks() {
					if !bytes.Equal(orig.Block(b), restored.Block(b)) {
						return fmt.Sprintf("block %d = %x, was %x", b, restored.Block(b), orig.Block(b))
					}
				}
				return ""
			}}
		for a, n := range shardedpaxos.Nodes(cfg, nil) {
			run.Replicas[a] = n.(*shardedpaxos.Replica)
		}
		for i := range 3 {
			run.Clients[msg.ClientAddr(i)] = shardedpaxos.NewClient(uint64(i+1), cfg,
				workload.Generate(rng.Uint64, cfg.Layout, 0, 15, workload.DefaultMix))
		}
		st.Add(paxostest.CheckPersist(t, run))
	}
	t.Logf("%d steps, %d restores checked; at the end %d replicas had collected slots, %d had promised a later ballot",
		st.Steps, st.Checks, st.Collected, st.Elected)
	if st.Collected == 0 || st.Elected == 0 {
		t.Fatal("the runs exercised no garbage collection or no election")
	}
}

// A replica restored from a persisted state starts as a follower, even
// member 0, which a fresh deployment starts as the leader of the zero
// ballot: proposing again at that ballot from slot 1 could put a second
// value in a slot it already proposed.
func TestRestoredStartsAsFollower(t *testing.T) {
	cfg := persistConfig
	r := shardedpaxos.NewReplica(cfg, 0, 0)
	r.TrackChanges()
	ctx := nodetest.New(cfg.Addr(0, 0))
	r.Init(ctx)
	r.Handle(ctx, msg.ClientAddr(0), msg.Request{Client: 1, Seq: 1, Ops: []msg.Op{{Kind: msg.OpAdd, Block: 0, Delta: 1}}})
	if _, leading := r.Leading(); !leading || len(r.Slots()) != 1 {
		t.Fatalf("member 0 of a fresh deployment: leading %v, %d slots; want the leader with slot 1 proposed", leading, len(r.Slots()))
	}
	disk := node.Disk{}
	r.Persist(disk)
	x := shardedpaxos.NewReplica(cfg, 0, 0)
	x.TrackChanges()
	if err := x.Restore(disk); err != nil {
		t.Fatal(err)
	}
	ctx = nodetest.New(cfg.Addr(0, 0))
	x.Init(ctx)
	for _, e := range ctx.Take() {
		if _, hb := e.Timer.(paxos.HeartbeatTimer[shardedpaxos.Value, shardedpaxos.ID]); hb {
			t.Fatalf("restored member 0 set a heartbeat timer: %v", e)
		}
	}
	if _, leading := x.Leading(); leading || x.Role() != "follower" {
		t.Fatalf("restored member 0 is %s, want a follower", x.Role())
	}
	if !reflect.DeepEqual(x.Slots(), r.Slots()) {
		t.Fatalf("restored slots %v, want %v", x.Slots(), r.Slots())
	}
}
