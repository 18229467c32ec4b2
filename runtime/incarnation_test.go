package runtime

import (
	"context"
	"fmt"
	"maps"
	"net"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// incNode streams numbered Commits to its peer on a timer and checks what
// it receives. Each Commit names the sender's incarnation (Primary) and the
// configuration it was sent in (Shard); the numbers start at 1 again in
// every configuration. A NewConfig that starts a newer incarnation here
// resets the node; one for the next configuration moves it there.
type incNode struct {
	self, peer node.Addr
	inc, num   uint64
	cfg        msg.Config // the configuration it is in (node.Peered)
	next       uint64
	last       map[[2]uint64]uint64 // (sender inc, config) -> last number
	got        int
	bad        []string
}

type incTick struct{}

func (incTick) Hash(h *node.Hasher) { h.Uint64(77) }

func newIncNode(self, peer node.Addr) *incNode {
	return &incNode{self: self, peer: peer, inc: 1, next: 1, last: map[[2]uint64]uint64{}}
}

func (n *incNode) Init(ctx node.Context) {
	ctx.SetTimer(incTick{}, time.Millisecond, 2*time.Millisecond)
}
func (n *incNode) Timer(ctx node.Context, _ node.Timer) {
	for i := 0; i < 5; i++ {
		ctx.Stream(n.peer, msg.Commit{Shard: int(n.num), Primary: n.inc, OpNum: n.next})
		n.next++
	}
	ctx.SetTimer(incTick{}, time.Millisecond, 2*time.Millisecond)
}
func (n *incNode) Handle(ctx node.Context, from node.Addr, m node.Message) {
	switch m := m.(type) {
	case msg.NewConfig:
		if inc, ok := m.StartsIncarnation(n.self); ok && inc > n.inc {
			*n = *newIncNode(n.self, n.peer)
			n.inc, n.num, n.cfg = inc, m.Config.Num, m.Config
			ctx.SetTimer(incTick{}, time.Millisecond, 2*time.Millisecond)
		} else if m.Config.Num == n.num+1 {
			n.num, n.next, n.cfg = m.Config.Num, 1, m.Config
		}
	case msg.Commit:
		k := [2]uint64{m.Primary, uint64(m.Shard)}
		if m.OpNum != n.last[k]+1 && len(n.bad) < 10 {
			n.bad = append(n.bad, fmt.Sprintf("incarnation %d got %d after %d from incarnation %d in configuration %d",
				n.inc, m.OpNum, n.last[k], m.Primary, m.Shard))
		}
		if uint64(m.Shard) < n.num && len(n.bad) < 10 {
			n.bad = append(n.bad, fmt.Sprintf("incarnation %d in configuration %d got a message sent in configuration %d", n.inc, n.num, m.Shard))
		}
		n.last[k] = m.OpNum
		n.got++
	}
}
func (n *incNode) Clone() node.Node    { c := *n; return &c }
func (n *incNode) Hash() uint64        { return n.inc<<32 | n.num }
func (n *incNode) Incarnation() uint64 { return n.inc }
func (n *incNode) ConfigNum() uint64   { return n.num }
func (n *incNode) PeerVersion() uint64 { return n.num }
func (n *incNode) PeerIncarnations(fn func(node.Addr, uint64)) {
	n.cfg.Incarnations(fn)
}
func (n *incNode) TrackChanges()         {}
func (n *incNode) Persist(w node.Writer) { w.Put("x", []byte{byte(n.inc)}) }
func (n *incNode) Restore(node.Reader) error {
	return nil
}

// TestIncarnationsEndStreams runs data/0 and parity/1 on two hosts, each
// streaming to the other. parity/1 is replaced (a NewConfig starting its
// incarnation 2 reaches it first): the old stream from data/0 must not
// reach the new incarnation, nor the new incarnation's messages be taken
// for the old one's; data/0 learns of the replacement later (it applies
// the configuration), and its stream starts over for the new incarnation,
// while the stream the new incarnation opened to it goes on.
func TestIncarnationsEndStreams(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 8}
	lnA, _ := net.Listen("tcp", "127.0.0.1:0")
	lnB, _ := net.Listen("tcp", "127.0.0.1:0")
	resolve := func(a node.Addr) (string, bool) {
		switch a {
		case "data/0":
			return lnA.Addr().String(), true
		case "parity/1":
			return lnB.Addr().String(), true
		}
		return "", false
	}
	start := func(ln net.Listener, a, peer node.Addr) (*Host, *Store) {
		st, err := OpenStore(t.TempDir(), false)
		if err != nil {
			t.Fatal(err)
		}
		h := NewHost(Options{Listener: ln, Resolve: resolve, BlockSize: 64, Store: st})
		if err := h.AddNode(a, newIncNode(a, peer)); err != nil {
			t.Fatal(err)
		}
		h.Start()
		return h, st
	}
	ha, sa := start(lnA, "data/0", "parity/1")
	hb, sb := start(lnB, "parity/1", "data/0")
	defer func() { ha.Stop(); hb.Stop(); _ = sa.Close(); _ = sb.Close() }()
	look := func(h *Host, a node.Addr) (n incNode) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
		defer cancel()
		if err := h.Inspect(ctx, a, func(x node.Node) {
			n = *x.(*incNode)
			n.bad, n.last = append([]string(nil), n.bad...), maps.Clone(n.last)
		}); err != nil {
			t.Fatal(err)
		}
		if len(n.bad) > 0 {
			t.Fatalf("%s: %v", a, n.bad)
		}
		return n
	}
	waitGot := func(h *Host, a node.Addr, more int) {
		t.Helper()
		base := look(h, a).got
		deadline := time.Now().Add(safetyStop)
		for look(h, a).got < base+more {
			if time.Now().After(deadline) {
				t.Fatalf("%s received %d more messages, want %d", a, look(h, a).got-base, more)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitGot(ha, "data/0", 200)
	waitGot(hb, "parity/1", 200)

	cfg := msg.InitialConfig(l)
	cfg.Num, cfg.Parity[1], cfg.Changed = 1, 2, "parity/1"
	nc := msg.NewConfig{Config: cfg}
	if err := hb.Deliver(context.Background(), "reconfig", "parity/1", nc); err != nil {
		t.Fatal(err)
	}
	// The new incarnation gets nothing from data/0, which still streams
	// for configuration 0 to incarnation 1; data/0 keeps getting the new
	// incarnation's stream.
	waitGot(ha, "data/0", 200)
	if b := look(hb, "parity/1"); b.inc != 2 || b.got != 0 {
		t.Fatalf("parity/1 is incarnation %d and received %d messages before data/0 learned of it", b.inc, b.got)
	}
	// data/0 applies configuration 1: its stream starts over.
	if err := ha.Deliver(context.Background(), "reconfig", "data/0", nc); err != nil {
		t.Fatal(err)
	}
	waitGot(hb, "parity/1", 200)
	waitGot(ha, "data/0", 200)
	if a := look(ha, "data/0"); a.num != 1 || a.last[[2]uint64{2, 1}] == 0 {
		t.Fatalf("data/0: configuration %d, %v", a.num, a.last)
	}
}
