package wire

import "testing"

// TestDirtyPool: a buffer has the length asked for and room for it, and
// one put back is handed out again for a size of its tier.
func TestDirtyPool(t *testing.T) {
	p := &dirtyPool{}
	for _, n := range []int{0, 1, 255, 256, 257, 4096, 130 << 10, 1 << maxTier, 1<<maxTier + 1} {
		b := p.Get(n)
		if len(*b) != n || cap(*b) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(*b), cap(*b))
		}
		p.Put(b)
	}
	b := p.Get(5000) // tier 8 KiB
	(*b)[0] = 7
	p.Put(b)
	for range 100 { // sync.Pool may drop it; it must not hand out a short one
		c := p.Get(8 << 10)
		if len(*c) != 8<<10 {
			t.Fatalf("Get(8 KiB) after a Put: len %d", len(*c))
		}
		p.Put(c)
	}
	small := make([]byte, 10, 300) // not from the pool: goes to the 256 tier
	p.Put(&small)
	if c := p.Get(256); len(*c) != 256 {
		t.Fatalf("Get(256): len %d", len(*c))
	}
}
