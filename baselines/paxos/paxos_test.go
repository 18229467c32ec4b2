package paxos

import (
	"testing"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

func TestAddrRoundTrip(t *testing.T) {
	a := Addr("sp", 3, 1, Machine(3, 1, Machines(4, 3)))
	if a != "sp3.1/0" {
		t.Fatalf("Addr = %q, want sp3.1/0", a)
	}
	if g, i, ok := ParseAddr("sp", a); !ok || g != 3 || i != 1 {
		t.Fatalf("ParseAddr(%q) = %d, %d, %v", a, g, i, ok)
	}
	for _, bad := range []node.Addr{"rs3.1/0", "sp3/0", "sp3.1", "sp-1.0/0", "spx.1/0", "data/0"} {
		if _, _, ok := ParseAddr("sp", bad); ok {
			t.Errorf("ParseAddr(%q) succeeded", bad)
		}
	}
}

func TestWindow(t *testing.T) {
	var w Window[int]
	*w.Grow(3) = 30
	*w.Grow(1) = 10
	if w.Last() != 3 || *w.At(1) != 10 || *w.At(2) != 0 || w.At(0) != nil || w.At(4) != nil {
		t.Fatalf("window %+v", w)
	}
	c := w.Clone()
	w.Discard(2)
	if w.Base != 2 || w.Last() != 3 || w.At(2) != nil || *w.At(3) != 30 {
		t.Fatalf("after Discard(2): %+v", w)
	}
	w.Discard(1) // not past the base: no change
	w.Discard(9) // past the last slot: empty, based at 9
	if w.Base != 9 || len(w.Entries) != 0 || c.Base != 0 || *c.At(1) != 10 {
		t.Fatalf("after Discard(9): %+v, clone %+v", w, c)
	}
}

func TestVotes(t *testing.T) {
	v := Vote(0) | Vote(5)
	if !v.Has(5) || v.Has(1) || v.Count() != 2 {
		t.Fatalf("votes %b", v)
	}
}

func TestClientTable(t *testing.T) {
	a, b := NewClientTable(), NewClientTable()
	r1 := ClientEntry{Seq: 1, Reply: msg.Reply{Seq: 1}}
	r2 := ClientEntry{Seq: 2, Reply: msg.Reply{Seq: 2, Err: "x"}}
	a.Put(1, r1)
	a.Put(2, r2)
	b.Put(2, r2)
	b.Put(1, ClientEntry{Seq: 9})
	c := b.Clone()
	b.Put(1, r1)
	if a.Sum() != b.Sum() {
		t.Fatal("tables with the same entries hash differently")
	}
	if e, _ := c.Get(1); e.Seq != 9 || c.Sum() == b.Sum() {
		t.Fatal("changing a table changed its clone")
	}
	var witness ClientTable
	if _, ok := witness.Get(1); ok || witness.Clone().Sum() != 0 {
		t.Fatal("the zero table is not empty")
	}
}

// Or fills the fields t leaves unset (zero or negative) from d and keeps
// the others; WithDefaults fills them from DefaultTiming.
func TestTimingOr(t *testing.T) {
	d := Timing{Heartbeat: 1, Election: 2, Misses: 3, Retry: 4, LearnBatch: 5}
	got := Timing{Heartbeat: 10, Election: -1, Misses: 0, Retry: 40, LearnBatch: -5}.Or(d)
	if want := (Timing{Heartbeat: 10, Election: 2, Misses: 3, Retry: 40, LearnBatch: 5}); got != want {
		t.Errorf("Or = %+v, want %+v", got, want)
	}
	if got := (Timing{}).WithDefaults(); got != DefaultTiming {
		t.Errorf("WithDefaults of the zero Timing = %+v, want %+v", got, DefaultTiming)
	}
}
