package online

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/runtime"
)

var testLayout = erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 2, BlockSize: 64}

// load starts a local cluster and writers that add to its blocks until
// the test ends.
func load(t *testing.T, writers int) *runtime.Local {
	t.Helper()
	return loadWith(t, writers, runtime.LocalOptions{Durability: "memory"})
}

// loadWith is load with o (the layout and address are the test's).
func loadWith(t *testing.T, writers int, o runtime.LocalOptions) *runtime.Local {
	t.Helper()
	o.Layout, o.Addr = testLayout, "127.0.0.1:0"
	lc, err := runtime.StartLocal(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wait := startWriters(ctx, t, lc, writers, func(c *client.Client, w int) {
		for i := 0; ctx.Err() == nil; i++ {
			b := uint64(w+i) % testLayout.NumBlocks()
			_, _ = c.Add(ctx, b, 0, uint64(i+1))
		}
	})
	t.Cleanup(func() { cancel(); wait(); lc.Close() })
	return lc
}

// startWriters dials n clients of lc and runs write on each in its own
// goroutine; wait waits for them to return.
func startWriters(ctx context.Context, t *testing.T, lc *runtime.Local, n int, write func(c *client.Client, w int)) (wait func()) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range n {
		c, err := client.Dial(ctx, lc.EntryAddr, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			write(c, w)
		}()
	}
	return wg.Wait
}

func TestCutsUnderLoad(t *testing.T) { cutsUnderLoad(t, load(t, 3)) }

// On a durable cluster, whose batches are released after their fsync, a
// snapshot waits for the released state: the cuts are consistent and
// restore to the live nodes' hashes.
func TestCutsUnderLoadDurable(t *testing.T) {
	cutsUnderLoad(t, loadWith(t, 3, runtime.LocalOptions{Durability: "durable", DataDir: t.TempDir()}))
}

func cutsUnderLoad(t *testing.T, lc *runtime.Local) {
	src := Local(lc.Machines)
	ctx := context.Background()
	cuts, inflight, rejected := 0, 0, 0
	var round, held time.Duration
	for attempt := 0; cuts < 3 && attempt < 300; attempt++ {
		time.Sleep(runtime.DefaultSnapshotMinInterval)
		start := time.Now()
		snaps, err := src(ctx)
		if err != nil {
			t.Fatal(err)
		}
		round = max(round, time.Since(start))
		for _, s := range snaps {
			for _, n := range s.Nodes {
				held = max(held, n.Held)
				// Released state only: every message a stream numbered
				// is queued or was acknowledged.
				for _, o := range n.Out {
					if k := len(o.Queue); k > 0 && o.Queue[k-1].Seq != o.Next-1 {
						t.Fatalf("%s's stream to %s numbered up to %d, queued up to %d", n.Addr, o.To, o.Next-1, o.Queue[k-1].Seq)
					}
				}
			}
		}
		c, err := NewCut(snaps)
		if err != nil {
			rejected++
			continue
		}
		cuts++
		inflight += len(c.InFlight)
		if c.Cluster != runtime.ClusterID(testLayout) {
			t.Fatalf("cut of cluster %q, want %q", c.Cluster, runtime.ClusterID(testLayout))
		}
		nodes, err := c.Restore()
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 2*testLayout.N {
			t.Fatalf("cut restores %d servers, want %d", len(nodes), 2*testLayout.N)
		}
		for _, s := range c.Nodes {
			if h := nodes[s.Addr].Hash(); h != s.Hash {
				t.Fatalf("%s restored from the cut hashes %x, the live node %x", s.Addr, h, s.Hash)
			}
		}
		init, err := c.State()
		if err != nil {
			t.Fatal(err)
		}
		sc := c.Scenario()
		opt := sc.Options(mc.BFS)
		opt.MaxStates = 3000
		if r := mc.Search(init, opt); r.Outcome == mc.Violation {
			t.Fatalf("search from a cut of the unmutated protocol violates %s: %s", r.Predicate, r.Explanation)
		}
	}
	if cuts < 3 {
		t.Fatalf("only %d consistent cuts in 300 rounds (%d rejected)", cuts, rejected)
	}
	t.Logf("%d cuts (%d stream messages in flight), %d rounds rejected; slowest round %v, longest loop hold %v", cuts, inflight, rejected, round, held)
}

func TestCutRejectsOtherCluster(t *testing.T) {
	a := &runtime.Snapshot{Cluster: "n5-g3-f2-w0-s2-b64"}
	b := &runtime.Snapshot{Cluster: "n3-g2-f1-w0-s2-b8"}
	if _, err := NewCut([]*runtime.Snapshot{a, b}); err == nil || err.Error() != "snapshots of two clusters: n5-g3-f2-w0-s2-b64 and n3-g2-f1-w0-s2-b8" {
		t.Fatalf("a cut of snapshots of two clusters: %v", err)
	}
}

func TestCutRejectsNonCut(t *testing.T) {
	send := runtime.NodeSnapshot{Addr: "data/0", Out: []runtime.OutSnapshot{{To: "parity/1", Stream: 7, Next: 3,
		Queue: []runtime.Queued{{Seq: 2}}}}}
	recv := runtime.NodeSnapshot{Addr: "parity/1", In: []runtime.InSnapshot{{From: "data/0", Stream: 7, Applied: 3}}}
	if _, err := NewCut([]*runtime.Snapshot{{Nodes: []runtime.NodeSnapshot{send, recv}}}); err == nil ||
		err.Error() != "not a cut: parity/1 applied message 3 from data/0, which had numbered only 2" {
		t.Fatalf("a receiver ahead of its sender: %v", err)
	}
	recv.In[0].Applied = 0 // message 1 was dropped as acknowledged
	if _, err := NewCut([]*runtime.Snapshot{{Nodes: []runtime.NodeSnapshot{send, recv}}}); err == nil ||
		err.Error() != "not a cut: data/0 had dropped message 1 to parity/1 as acknowledged, which parity/1 had not applied at its snapshot" {
		t.Fatalf("a cut missing an acknowledged, unapplied message: %v", err)
	}
	recv.In[0].Applied = 1
	c, err := NewCut([]*runtime.Snapshot{{Nodes: []runtime.NodeSnapshot{send, recv}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.InFlight) != 1 || c.InFlight[0].Seq != 2 {
		t.Fatalf("in flight: %+v, want message 2", c.InFlight)
	}
}

// A checker slower than the pulls drops the older pending cut: each cut's
// log line waits for five more rounds, of which only the newest waits;
// the same cut again is not searched again; a round of another cluster
// ends the run.
func TestRunDropsWhenBehind(t *testing.T) {
	lc := load(t, 1)
	ctx := context.Background()
	var snaps []*runtime.Snapshot
	for attempt := 0; snaps == nil && attempt < 100; attempt++ {
		time.Sleep(runtime.DefaultSnapshotMinInterval)
		s, err := Local(lc.Machines)(ctx)
		if err == nil {
			if _, err = NewCut(s); err == nil {
				snaps = s
			}
		}
	}
	if snaps == nil {
		t.Fatal("no consistent cut in 100 rounds")
	}
	var pulls atomic.Int64
	src := func(context.Context) ([]*runtime.Snapshot, error) { pulls.Add(1); return snaps, nil }
	slow := writerFunc(func(p []byte) {
		if strings.HasPrefix(string(p), "cut") {
			for n := pulls.Load(); pulls.Load() < n+5; {
				time.Sleep(time.Millisecond)
			}
		}
	})
	rep, err := Run(ctx, src, Options{Every: time.Millisecond, MaxStates: 100, Cuts: 3, Log: slow})
	if err != nil {
		t.Fatal(err)
	}
	taken := len(rep.States) + rep.Same
	// Of the five rounds a log line waits for, the second to fourth find
	// the previous one pending: at least three dropped per line.
	if len(rep.States) != 1 || taken != 3 || rep.Dropped < 3*3 || rep.Pulled-rep.Rejected-rep.Dropped-taken > 1 {
		t.Fatalf("%d rounds, %d not a cut, %d cuts searched, %d the same again, %d dropped: want 1 searched, 2 the same, at least 3 dropped behind each, at most 1 pending",
			rep.Pulled, rep.Rejected, len(rep.States), rep.Same, rep.Dropped)
	}
	other := make([]*runtime.Snapshot, len(snaps))
	for i, s := range snaps {
		c := *s
		c.Cluster = "n3-g2-f1-w0-s1-b8"
		other[i] = &c
	}
	pulls.Store(0)
	mixed := func(context.Context) ([]*runtime.Snapshot, error) {
		if pulls.Add(1) > 1 {
			return other, nil
		}
		return snaps, nil
	}
	if _, err := Run(ctx, mixed, Options{Every: time.Millisecond, MaxStates: 100}); err == nil ||
		err.Error() != "snapshot of cluster n3-g2-f1-w0-s1-b8, but checking cluster "+runtime.ClusterID(testLayout) {
		t.Fatalf("a round of another cluster: %v", err)
	}
}

// writerFunc is an io.Writer that hands each write to a function.
type writerFunc func([]byte)

func (w writerFunc) Write(p []byte) (int, error) { w(p); return len(p), nil }

func TestSnapshotRPC(t *testing.T) {
	lc := load(t, 1)
	conns := machineConns(t, lc)
	ctx := context.Background()
	if _, err := Machines(conns, lc.Cluster.Machines, "n3-g2-f1-w0-s1-b8")(ctx); err == nil || !strings.Contains(err.Error(), "not n3-g2-f1-w0-s1-b8") {
		t.Fatalf("a snapshot of another cluster: %v", err)
	}
	snaps, err := Machines(conns, lc.Cluster.Machines, runtime.ClusterID(testLayout))(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != testLayout.N || len(snaps[0].Nodes) != 2 || snaps[0].Layout != testLayout {
		t.Fatalf("snapshots: %d machines, %d nodes on machine 0, layout %+v", len(snaps), len(snaps[0].Nodes), snaps[0].Layout)
	}
	// At once again: refused by the rate limit.
	if _, err := lc.Machines[0].Snapshot(ctx, runtime.SnapshotLimits{MinInterval: time.Hour}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a snapshot within the minimum interval: %v", err)
	}
	if _, err := runtime.EncodeSnapshot(snaps[0], 10); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("a snapshot over its size budget: %v", err)
	}
}

func TestSteerChecked(t *testing.T) {
	lc := load(t, 2)
	conns := machineConns(t, lc)
	ctx := context.Background()
	id := runtime.ClusterID(testLayout)
	var cut *Cut
	for attempt := 0; cut == nil && attempt < 100; attempt++ {
		time.Sleep(runtime.DefaultSnapshotMinInterval)
		snaps, err := Machines(conns, lc.Cluster.Machines, id)(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cut, _ = NewCut(snaps)
	}
	if cut == nil {
		t.Fatal("no consistent cut in 100 rounds")
	}
	f := Filter{From: "data/0", To: "parity/1", Kind: "SnapshotData"}
	r, err := cut.CheckFilter(f, Options{MaxStates: 2000, Settings: mc.Settings{MaxTimerFires: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome == mc.Violation {
		t.Fatalf("%s leads to a violation of %s: %s", f, r.Predicate, r.Explanation)
	}
	if err := Steer(ctx, conns, lc.Cluster.Machines, id, f, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := Steer(ctx, conns, lc.Cluster.Machines, "n3-g2-f1-w0-s1-b8", f, time.Minute); err == nil || !strings.Contains(err.Error(), "not n3-g2-f1-w0-s1-b8") {
		t.Fatalf("steering another cluster: %v", err)
	}
	if err := Steer(ctx, conns, lc.Cluster.Machines, id, Filter{From: "data/9", To: "parity/1", Kind: "X"}, time.Minute); err == nil {
		t.Fatal("steered a machine the cluster does not have")
	}
}

// machineConns connects to every machine of lc.
func machineConns(t *testing.T, lc *runtime.Local) []grpc.ClientConnInterface {
	t.Helper()
	c, err := client.Dial(context.Background(), lc.EntryAddr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var conns []grpc.ClientConnInterface
	for _, a := range lc.Cluster.Machines {
		cc, err := c.Conn(a)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cc)
	}
	return conns
}
