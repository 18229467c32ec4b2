package shardedpaxos_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/amalgam-store/amalgam/baselines/paxos"
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

// TestPersistRestore runs a group's replicas and clients with messages
// delivered in random order and timers firing at random (so leaders
// change, slots are retransmitted, learned and collected), persisting
// every replica after every handler into its own disk, as the runtime
// does after every batch. Every few steps, for every replica: what the
// incremental writes left on its disk must equal what a Persist from
// scratch writes; and a replica restored from that disk must hold the
// same promise, log (accepted and chosen slots), applied prefix, GC point,
// client table and blocks, and persist from scratch exactly the same
// records.
func TestPersistRestore(t *testing.T) {
	cfg := persistConfig
	l := cfg.Layout
	steps, checks, collected, elected := 0, 0, 0, 0
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes := shardedpaxos.Nodes(cfg, nil)
		replicas := map[node.Addr]*shardedpaxos.Replica{}
		for a, n := range nodes {
			r := n.(*shardedpaxos.Replica)
			r.TrackChanges()
			replicas[a] = r
		}
		var clients []*shardedpaxos.Client
		for i := range 3 {
			c := shardedpaxos.NewClient(uint64(i+1), cfg, workload.Generate(rng.Uint64, l, 0, 15, workload.DefaultMix))
			clients = append(clients, c)
			nodes[msg.ClientAddr(i)] = c
		}
		net := nodetest.NewNet(nodes)
		disks := map[node.Addr]node.Disk{}
		for a, r := range replicas {
			disks[a] = node.Disk{}
			r.Persist(disks[a])
		}
		addrs := net.Addrs()
		done := func() bool {
			for _, c := range clients {
				if !c.Done() {
					return false
				}
			}
			return true
		}
		for n := 0; n < 30000 && !done(); n++ {
			steps++
			var a node.Addr
			if fl := net.InFlight(); len(fl) > 0 && rng.IntN(20) > 0 {
				e, _, _ := net.Deliver(rng.IntN(len(fl)))
				a = e.To
			} else {
				a = addrs[rng.IntN(len(addrs))]
				net.Fire(a)
			}
			if r, ok := replicas[a]; ok {
				r.Persist(disks[a])
			}
			if n%11 == 0 {
				for a, r := range replicas {
					checkRestore(t, cfg, r, disks[a])
					checks++
				}
			}
		}
		if !done() {
			t.Fatalf("seed %d: clients not done", seed)
		}
		for a, r := range replicas {
			checkRestore(t, cfg, r, disks[a])
			if r.GC() > 0 {
				collected++
			}
			if r.Promised().Round > 0 {
				elected++
			}
		}
	}
	t.Logf("%d steps, %d restores checked; at the end %d replicas had collected slots, %d had promised a later ballot",
		steps, checks, collected, elected)
	if collected == 0 || elected == 0 {
		t.Fatal("the runs exercised no garbage collection or no election")
	}
}

// checkRestore compares replica r with what it persisted incrementally
// (disk) and with a replica restored from disk.
func checkRestore(t *testing.T, cfg shardedpaxos.Config, r *shardedpaxos.Replica, disk node.Disk) {
	t.Helper()
	scratch := fromScratch(r)
	if !sameDisk(disk, scratch) {
		t.Fatalf("%s: incremental records differ from a Persist from scratch:\nincremental %v\nscratch     %v",
			cfg.Addr(r.Group(), r.Member()), keys(disk), keys(scratch))
	}
	x := shardedpaxos.NewReplica(cfg, r.Group(), r.Member())
	x.TrackChanges()
	if err := x.Restore(disk); err != nil {
		t.Fatal(err)
	}
	who := cfg.Addr(r.Group(), r.Member())
	if x.Promised() != r.Promised() || x.Applied() != r.Applied() || x.GC() != r.GC() {
		t.Fatalf("%s restored with promise %v, applied %d, GC %d; was %v, %d, %d", who, x.Promised(), x.Applied(), x.GC(),
			r.Promised(), r.Applied(), r.GC())
	}
	if !reflect.DeepEqual(x.Slots(), r.Slots()) {
		t.Fatalf("%s restored with slots %v, was %v", who, x.Slots(), r.Slots())
	}
	for c := uint64(1); c <= 3; c++ {
		ex, okx := x.Executed(c)
		er, okr := r.Executed(c)
		if okx != okr || !reflect.DeepEqual(ex, er) {
			t.Fatalf("%s restored with client %d's entry %+v (%v), was %+v (%v)", who, c, ex, okx, er, okr)
		}
	}
	for b := range cfg.Layout.NumBlocks() {
		if !bytes.Equal(x.Block(b), r.Block(b)) {
			t.Fatalf("%s restored with block %d = %x, was %x", who, b, x.Block(b), r.Block(b))
		}
	}
	if again := fromScratch(x); !sameDisk(again, scratch) {
		t.Fatalf("%s: the restored replica persists %v, the original %v", who, keys(again), keys(scratch))
	}
}

func fromScratch(r *shardedpaxos.Replica) node.Disk {
	c := r.Clone().(*shardedpaxos.Replica)
	c.TrackChanges()
	d := node.Disk{}
	c.Persist(d)
	return d
}

func sameDisk(a, b node.Disk) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func keys(d node.Disk) []string {
	var ks []string
	_ = d.Scan("", func(k string, _ []byte) error { ks = append(ks, k); return nil })
	return ks
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
