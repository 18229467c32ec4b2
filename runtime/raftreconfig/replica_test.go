package raftreconfig

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/wire"
)

var testLayout = erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 16}

type group struct {
	t     *testing.T
	peers map[uint64]string
	dirs  map[uint64]string
	reps  map[uint64]*Replica
	init  Initial
	every uint64
}

func newGroup(t *testing.T, n int, snapEvery uint64) *group {
	g := &group{t: t, peers: map[uint64]string{}, dirs: map[uint64]string{}, reps: map[uint64]*Replica{}, every: snapEvery}
	var hosts []string
	for m := 0; m < testLayout.N; m++ {
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", 1+m)) // nobody listens: sends are dropped
	}
	g.init = Initial{Config: msg.InitialConfig(testLayout), Hosts: hosts, Durability: "durable"}
	lns := map[uint64]net.Listener{}
	for id := uint64(1); id <= uint64(n); id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id] = ln
		g.peers[id] = ln.Addr().String()
		g.dirs[id] = t.TempDir()
	}
	for id, ln := range lns {
		g.start(id, ln)
	}
	t.Cleanup(func() {
		for _, r := range g.reps {
			r.Close()
		}
	})
	return g
}

func (g *group) start(id uint64, ln net.Listener) {
	g.t.Helper()
	if ln == nil {
		var err error
		for i := 0; ; i++ {
			if ln, err = net.Listen("tcp", g.peers[id]); err == nil {
				break
			}
			if i > 100 {
				g.t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	r, err := Start(Options{ID: id, Peers: g.peers, Listener: ln, Dir: g.dirs[id], NoSync: true, Initial: g.init,
		Tick: 20 * time.Millisecond, SnapshotEvery: g.every, SnapshotKeep: 2, ProposalTimeout: time.Second})
	if err != nil {
		g.t.Fatal(err)
	}
	g.reps[id] = r
}

// safetyStop bounds the waits for a leader, a proposal or the replicas
// applying it only to turn a hang into a clear failure: elections and
// proposals on a loaded machine may take longer than any short window.
const safetyStop = 5 * time.Minute

// leader waits for a replica that leads.
func (g *group) leader() *Replica {
	g.t.Helper()
	deadline := time.Now().Add(safetyStop)
	for time.Now().Before(deadline) {
		for _, r := range g.reps {
			if r.Leader() {
				return r
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.t.Fatal("no leader elected")
	return nil
}

func (g *group) kill(r *Replica) uint64 {
	for id, x := range g.reps {
		if x == r {
			r.Close()
			delete(g.reps, id)
			return id
		}
	}
	g.t.Fatal("not a replica")
	return 0
}

// propose registers a spare through the leader, retrying across leader
// changes, as an operator's command does.
func (g *group) propose(host string) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
	defer cancel()
	for {
		r := g.leader()
		err := r.propose(ctx, &wire.ReconfigEntry{Body: &wire.ReconfigEntry_Spare{Spare: host}})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			g.t.Fatalf("proposing %s: %v", host, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAll waits until every live replica has applied the spares.
func (g *group) waitAll(spares []string) {
	g.t.Helper()
	deadline := time.Now().Add(safetyStop)
	for {
		ok := true
		for _, r := range g.reps {
			ok = ok && slices.Equal(r.Directory().GetSpares(), spares)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			for id, r := range g.reps {
				g.t.Logf("replica %d: spares %v", id, r.Directory().GetSpares())
			}
			g.t.Fatalf("replicas did not all apply %v", spares)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLeaderKilled runs 3 replicas, has them agree on changes, kills the
// leader twice (restarting the first one killed from its log), and checks
// that what was applied survives, that proposals continue with a new
// leader, and that a restarted replica catches up (through a snapshot:
// the log is compacted every 5 entries).
func TestLeaderKilled(t *testing.T) {
	g := newGroup(t, 3, 5)
	var want []string
	add := func(k int) {
		for i := 0; i < k; i++ {
			h := fmt.Sprintf("spare-%d:1", len(want))
			g.propose(h)
			want = append(want, h)
		}
		g.waitAll(want)
	}
	add(8)
	first := g.kill(g.leader())
	add(8) // a new leader takes proposals with one replica down
	g.start(first, nil)
	g.waitAll(want) // the restarted replica catches up
	if n := g.reps[first].SnapshotsReceived(); n == 0 {
		t.Error("the restarted replica caught up without a snapshot: the test exercised less than it says")
	}
	second := g.kill(g.leader())
	add(4)
	g.start(second, nil)
	g.waitAll(want)
	for id, r := range g.reps {
		if v := r.Directory().GetVersion(); v != uint64(1+len(want)) {
			t.Errorf("replica %d: address book version %d, want %d", id, v, 1+len(want))
		}
	}
}

// TestReplicaRestart restarts a single-replica service and checks the
// state comes back from the log and snapshot.
func TestReplicaRestart(t *testing.T) {
	g := newGroup(t, 1, 3)
	var want []string
	for i := 0; i < 7; i++ {
		h := fmt.Sprintf("s%d:1", i)
		g.propose(h)
		want = append(want, h)
	}
	g.waitAll(want)
	id := g.kill(g.leader())
	g.start(id, nil)
	g.waitAll(want)
	g.propose("last:1")
	g.waitAll(append(want, "last:1"))
}

// TestInitialStateChecked refuses a replica restarted with another layout.
func TestInitialStateChecked(t *testing.T) {
	g := newGroup(t, 1, 0)
	id := g.kill(g.leader())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	in := g.init
	in.Hosts = slices.Clone(in.Hosts)
	in.Hosts[0] = "elsewhere:1"
	_, err = Start(Options{ID: id, Peers: g.peers, Listener: ln, Dir: g.dirs[id], NoSync: true, Initial: in})
	if err == nil {
		t.Fatal("started with another machine list")
	}
}

// TestMoveSeesItsEntry moves machine slots to spares one after another
// and checks, as moveToSpare does, that the published address book shows
// each move as soon as its proposal returns, and that the move asked for
// the replacement of every server of the slot. Proposers used to be woken
// before the address book was published, so the check saw the old host
// and the slot stayed on a host with no servers.
func TestMoveSeesItsEntry(t *testing.T) {
	g := newGroup(t, 1, 1000)
	r := g.leader()
	ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
	defer cancel()
	for i := range 20 {
		m := i % testLayout.N
		spare := fmt.Sprintf("127.0.0.1:%d", 100+i)
		g.propose(spare)
		if err := r.moveToSpare(ctx, m, spare); err != nil {
			t.Fatalf("move %d of slot %d: %v", i, m, err)
		}
	}
	cfg := r.Config()
	for m := range testLayout.N {
		if cfg.Data[m] == 1 && !r.hasQueued(msg.Replace{Role: erasure.RoleData, Machine: m, Inc: 1}) {
			t.Fatalf("slot %d moved, but its data server is neither replaced nor queued: %+v", m, cfg)
		}
	}
}

// hasQueued reports whether the service has r in progress or queued.
func (r *Replica) hasQueued(q msg.Replace) bool {
	ch := make(chan bool, 1)
	r.do(func() { ch <- r.sm.svc.Pending(q) })
	return <-ch
}

// TestSilentMachinesSuspected runs one replica with a short detector and
// no machine heartbeating: after the grace and the suspicion rounds every
// slot is suspected, and with no spare none moves.
func TestSilentMachinesSuspected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"}
	r, err := Start(Options{ID: 1, Peers: map[uint64]string{1: ln.Addr().String()}, Listener: ln, Tick: 10 * time.Millisecond,
		Initial: Initial{Config: msg.InitialConfig(testLayout), Hosts: hosts}, SuspectAfter: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for len(r.Suspected()) < len(hosts) {
		time.Sleep(10 * time.Millisecond) // the test's own timeout bounds this
	}
	if got := r.Directory().GetHosts(); !slices.Equal(got, hosts) {
		t.Fatalf("slots moved with no spare: %v", got)
	}
}
