package main

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/runtime"
)

// The rebuild metrics follow a server's blocks left across scrapes: bytes
// rebuilt count every block that left, the rate and ETA are measured from
// the first scrape of the current rebuild, and a new incarnation starts a
// new measurement without losing the counter.
func TestRebuildTracking(t *testing.T) {
	c := newNodeCollector()
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	sample := func(inc uint64, left int) (bytes, rate, eta float64, ok bool) {
		s := runtime.NodeStat{Addr: "data/1", Incarnation: inc, DegradedBlocks: left, BlockSize: 4096}
		tr := c.track(s)
		rate, eta, ok = tr.progress(now, s)
		return tr.bytes, rate, eta, ok
	}
	if _, _, _, ok := sample(2, 100); ok {
		t.Fatal("rate from one sample")
	}
	now = now.Add(2 * time.Second)
	b, rate, eta, ok := sample(2, 60)
	if !ok || b != 40*4096 || rate != 20*4096 || eta != 3 {
		t.Fatalf("after 40 blocks in 2 s: bytes %v, rate %v, eta %v (%v); want %v, %v, 3", b, rate, eta, ok, 40*4096, 20*4096)
	}
	now = now.Add(time.Second)
	if b, _, _, ok := sample(2, 0); ok || b != 100*4096 {
		t.Fatalf("rebuilt: bytes %v, rate shown %v; want %v and no rate", b, ok, 100*4096)
	}
	now = now.Add(time.Second)
	sample(3, 50) // a new incarnation
	now = now.Add(time.Second)
	if b, rate, _, ok := sample(3, 40); !ok || b != 110*4096 || rate != 10*4096 {
		t.Fatalf("new incarnation: bytes %v, rate %v (%v); want %v, %v", b, rate, ok, 110*4096, 10*4096)
	}
}
