package paxostest

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// Durable is what the persistence check needs of a baseline's replica:
// node.Persistent and the paxos core's view.
type Durable[I comparable] interface {
	node.Persistent
	Group() int
	Member() int
	Promised() paxos.Ballot
	Applied() uint64
	GC() uint64
	Slots() []paxos.SlotView[I]
	Executed(c uint64) (paxos.ClientEntry, bool)
}

// PersistRun is one run of CheckPersist: replicas and the clients driving
// them, all of them the nodes of one nodetest.Net.
type PersistRun[I comparable, R Durable[I]] struct {
	Seed     uint64
	Replicas map[node.Addr]R
	Clients  map[node.Addr]Client
	// Fresh builds replica r as its process starts (its constructor).
	Fresh func(r R) R
	// SameApp reports how the restored replica's own state (blocks,
	// pieces) differs from the original's, "" if it does not.
	SameApp func(orig, restored R) string
}

// Client is a baseline's protocol client.
type Client interface {
	node.Node
	Done() bool
}

// PersistStats counts what CheckPersist exercised.
type PersistStats struct {
	Steps, Checks int
	Collected     int // replicas that had discarded slots at the end
	Elected       int // replicas that had promised a ballot after the zero one at the end
}

// Add adds o to s.
func (s *PersistStats) Add(o PersistStats) {
	s.Steps, s.Checks, s.Collected, s.Elected = s.Steps+o.Steps, s.Checks+o.Checks, s.Collected+o.Collected, s.Elected+o.Elected
}

// CheckPersist runs the replicas and clients with messages delivered in
// random order and timers firing at random (so leaders change, slots are
// retransmitted, learned and collected), persisting every replica after
// every handler into its own disk, as the runtime does after every batch,
// until the clients are done. Every 11 steps, and at the end, for every
// replica: what the incremental writes left on its disk must equal what
// a Persist from scratch writes; and a replica restored from that disk
// (Fresh, TrackChanges, Restore) must hold the same promise, log
// (accepted and chosen slots), applied prefix, GC point, client table and
// app state (SameApp), and persist from scratch exactly the same records.
func CheckPersist[I comparable, R Durable[I]](t *testing.T, run PersistRun[I, R]) PersistStats {
	t.Helper()
	rng := rand.New(rand.NewPCG(run.Seed, 7))
	nodes := map[node.Addr]node.Node{}
	disks := map[node.Addr]node.Disk{}
	for a, r := range run.Replicas {
		r.TrackChanges()
		nodes[a] = r
	}
	for a, c := range run.Clients {
		nodes[a] = c
	}
	net := nodetest.NewNet(nodes)
	for a, r := range run.Replicas {
		disks[a] = node.Disk{}
		r.Persist(disks[a])
	}
	addrs := net.Addrs()
	done := func() bool {
		for _, c := range run.Clients {
			if !c.Done() {
				return false
			}
		}
		return true
	}
	var st PersistStats
	for n := 0; n < 30000 && !done(); n++ {
		st.Steps++
		var a node.Addr
		if fl := net.InFlight(); len(fl) > 0 && rng.IntN(20) > 0 {
			e, _, _ := net.Deliver(rng.IntN(len(fl)))
			a = e.To
		} else {
			a = addrs[rng.IntN(len(addrs))]
			net.Fire(a)
		}
		if r, ok := run.Replicas[a]; ok {
			r.Persist(disks[a])
		}
		if n%11 == 0 {
			for a, r := range run.Replicas {
				run.checkRestore(t, a, r, disks[a])
				st.Checks++
			}
		}
	}
	if !done() {
		t.Fatalf("seed %d: clients not done", run.Seed)
	}
	for a, r := range run.Replicas {
		run.checkRestore(t, a, r, disks[a])
		if r.GC() > 0 {
			st.Collected++
		}
		if r.Promised().Round > 0 {
			st.Elected++
		}
	}
	return st
}

// checkRestore compares replica r at a with what it persisted
// incrementally (disk) and with a replica restored from disk.
func (run PersistRun[I, R]) checkRestore(t *testing.T, a node.Addr, r R, disk node.Disk) {
	t.Helper()
	scratch := fromScratch(r)
	if !sameDisk(disk, scratch) {
		t.Fatalf("seed %d, %s: incremental records differ from a Persist from scratch:\nincremental %v\nscratch     %v",
			run.Seed, a, keys(disk), keys(scratch))
	}
	x := run.Fresh(r)
	x.TrackChanges()
	if err := x.Restore(disk); err != nil {
		t.Fatal(err)
	}
	if x.Promised() != r.Promised() || x.Applied() != r.Applied() || x.GC() != r.GC() {
		t.Fatalf("seed %d, %s restored with promise %v, applied %d, GC %d; was %v, %d, %d", run.Seed, a, x.Promised(),
			x.Applied(), x.GC(), r.Promised(), r.Applied(), r.GC())
	}
	if !reflect.DeepEqual(x.Slots(), r.Slots()) {
		t.Fatalf("seed %d, %s restored with slots %v, was %v", run.Seed, a, x.Slots(), r.Slots())
	}
	for c := uint64(1); c <= uint64(len(run.Clients)); c++ {
		ex, okx := x.Executed(c)
		er, okr := r.Executed(c)
		if okx != okr || !reflect.DeepEqual(ex, er) {
			t.Fatalf("seed %d, %s restored with client %d's entry %+v (%v), was %+v (%v)", run.Seed, a, c, ex, okx, er, okr)
		}
	}
	if diff := run.SameApp(r, x); diff != "" {
		t.Fatalf("seed %d, %s restored: %s", run.Seed, a, diff)
	}
	if again := fromScratch(x); !sameDisk(again, scratch) {
		t.Fatalf("seed %d, %s: the restored replica persists %v, the original %v", run.Seed, a, keys(again), keys(scratch))
	}
}

// fromScratch is what a clone of r writes from scratch.
func fromScratch(r node.Persistent) node.Disk {
	c := r.Clone().(node.Persistent)
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
