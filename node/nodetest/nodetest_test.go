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
