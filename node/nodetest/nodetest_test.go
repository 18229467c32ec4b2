package nodetest

import (
	"slices"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

type ping struct {
	N    int
	Body []byte
	Note string
	Next *ping
}

func (ping) Hash(h *node.Hasher) { h.Uint64(1) }

type pong struct{ N uint64 }

func (pong) Hash(h *node.Hasher) { h.Uint64(2) }

type tick struct{}

func (tick) Hash(h *node.Hasher) { h.Uint64(3) }

func TestRecordsInOrder(t *testing.T) {
	c := New("a/1")
	if c.Self() != "a/1" {
		t.Fatalf("Self = %q", c.Self())
	}
	c.Send("b/2", ping{N: 1})
	c.Stream("b/3", pong{N: 2})
	c.SetTimer(tick{}, time.Millisecond, 2*time.Millisecond)
	c.Stream("b/2", ping{N: 3})

	all := c.Effects()
	if len(all) != 4 || len(c.Effects()) != 4 {
		t.Fatalf("Effects = %v, want 4 kept", all)
	}
	if got := all.Kind(Stream).Addrs(); !slices.Equal(got, []node.Addr{"b/3", "b/2"}) {
		t.Fatalf("streams to %v", got)
	}
	if got := all.To("b/2"); len(got) != 2 || got[0].Kind != Send || got[1].Kind != Stream {
		t.Fatalf("to b/2: %v", got)
	}
	if got := Msgs[ping](all); len(got) != 2 || got[0].N != 1 || got[1].N != 3 {
		t.Fatalf("pings %v", got)
	}
	if got := Of[pong](all); len(got) != 1 || got[0].To != "b/3" {
		t.Fatalf("pongs %v", got)
	}
	tm := all.Kind(Timer)
	if len(tm) != 1 || tm[0].Min != time.Millisecond || tm[0].Max != 2*time.Millisecond || tm[0].To != "" {
		t.Fatalf("timers %v", tm)
	}
	if got := c.Take(); len(got) != 4 {
		t.Fatalf("Take = %v", got)
	}
	if got := c.Take(); len(got) != 0 {
		t.Fatalf("Take after Take = %v", got)
	}
	c.Send("b/2", pong{})
	c.Reset()
	if len(c.Effects()) != 0 {
		t.Fatal("Reset kept effects")
	}
}

func TestString(t *testing.T) {
	c := New("a/1")
	c.Stream("b/2", ping{N: 7, Body: []byte{0xde, 0xad}, Next: &ping{N: 1}})
	c.Send("b/3", ping{})
	c.SetTimer(tick{}, 50*time.Millisecond, 100*time.Millisecond)
	want := "stream b/2 ping{N:7 Body:dead Next:{N:1}}\n" +
		"send b/3 ping{N:0}\n" +
		"timer tick{} 50ms..100ms"
	if got := c.Effects().String(); got != want {
		t.Fatalf("String:\n%s\nwant:\n%s", got, want)
	}
	if Format(nil) != "<nil>" {
		t.Fatalf("Format(nil) = %q", Format(nil))
	}
}

// echo streams every ping back as a pong to its sender, and answers a
// start message by taking the incarnation it names.
type echo struct {
	inc  uint64
	seen []int
}

func (e *echo) Init(ctx node.Context) { ctx.SetTimer(tick{}, time.Second, time.Second) }
func (e *echo) Handle(ctx node.Context, from node.Addr, m node.Message) {
	switch m := m.(type) {
	case ping:
		e.seen = append(e.seen, m.N)
		ctx.Stream(from, pong{N: uint64(m.N)})
	case start:
		e.inc = m.Inc
	}
}
func (e *echo) Timer(ctx node.Context, _ node.Timer) { ctx.Send("client/1", pong{N: 99}) }
func (e *echo) Clone() node.Node                     { c := *e; return &c }
func (e *echo) Hash() uint64                         { return 0 }
func (e *echo) Incarnation() uint64                  { return e.inc }

type start struct{ Inc uint64 }

func (start) Hash(h *node.Hasher)                          { h.Uint64(4) }
func (m start) StartsIncarnation(node.Addr) (uint64, bool) { return m.Inc, true }

func TestNetStreamsCrashesAndIncarnations(t *testing.T) {
	a, b := &echo{inc: 1}, &echo{inc: 1}
	n := NewNet(map[node.Addr]node.Node{"e/a": a, "e/b": b})
	if len(n.Timers("e/a")) != 1 || len(n.InFlight()) != 0 {
		t.Fatalf("after Init: timers %v, in flight %v", n.Timers("e/a"), n.InFlight())
	}
	n.Inject("e/a", "e/b", ping{N: 1})
	n.Inject("e/a", "e/b", ping{N: 2})
	if _, err := n.DeliverAll(10, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.seen, []int{1, 2}) || len(a.seen) != 0 {
		t.Fatalf("b saw %v, a saw %v", b.seen, a.seen)
	}
	// The pongs went back on b's stream to a and were handled there.
	if len(n.InFlight()) != 0 {
		t.Fatalf("in flight %v", n.InFlight())
	}

	// A stream message may not overtake the one before it.
	ctx := New("e/b")
	b.Handle(ctx, "e/a", ping{N: 3})
	b.Handle(ctx, "e/a", ping{N: 4})
	for _, e := range ctx.Take() {
		n.flight = append(n.flight, Envelope{From: "e/b", To: e.To, Msg: e.Msg, Stream: true})
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("delivered the second stream message first")
			}
		}()
		n.Deliver(1)
	}()

	// A crash ends b's streams and drops what is sent to it.
	n.Crash("e/b")
	if len(n.InFlight()) != 0 {
		t.Fatalf("streams of a crashed node still in flight: %v", n.InFlight())
	}
	n.Inject("e/a", "e/b", ping{N: 5})
	if _, _, handled := n.Deliver(0); handled || slices.Contains(b.seen, 5) {
		t.Fatal("a crashed node handled a message")
	}
	// A newer incarnation starts at the crashed address; an older does not.
	n.Inject("e/a", "e/b", start{Inc: 1})
	if _, _, handled := n.Deliver(0); handled {
		t.Fatal("a start of the current incarnation revived a crashed node")
	}
	n.Inject("e/a", "e/b", start{Inc: 2})
	if _, _, handled := n.Deliver(0); !handled || n.Crashed("e/b") || b.inc != 2 {
		t.Fatal("a new incarnation did not start at the crashed address")
	}

	// Timers fire oldest first; messages to no node are returned, unhandled.
	effs, ok := n.Fire("e/a")
	if !ok || len(effs) != 1 || len(n.Timers("e/a")) != 0 {
		t.Fatalf("fire: %v %v", effs, ok)
	}
	if _, ok := n.Fire("e/a"); ok {
		t.Fatal("fired a timer twice")
	}
	e, _, handled := n.Deliver(n.Next("", "client/1"))
	if handled || e.Msg != (pong{N: 99}) || e.String() != "e/a -> client/1 pong{N:99}" {
		t.Fatalf("to a client: %v handled %v", e, handled)
	}

	// DeliverAll stops at its limit with messages left.
	for i := 0; i < 3; i++ {
		n.Inject("x/0", "client/1", pong{})
	}
	if got, err := n.DeliverAll(2, nil, nil); err == nil || got != 2 {
		t.Fatalf("DeliverAll past its limit: %d, %v", got, err)
	}
}
