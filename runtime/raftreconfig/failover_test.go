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
)

// TestMoveSeesItsEntry moves machine slots to spares one after another
// and checks, as moveToSpare does, that the published address book shows
// each move as soon as its proposal returns, and that the move asked for
// the replacement of every server of the slot. Proposers used to be woken
// before the address book was published, so the check saw the old host
// and the slot stayed on a host with no servers.
func TestMoveSeesItsEntry(t *testing.T) {
	g := newGroup(t, 1, 1000)
	r := g.leader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
