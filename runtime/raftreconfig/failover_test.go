package raftreconfig

import (
	"context"
	"fmt"
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
