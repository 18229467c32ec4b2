package erasure

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/reedsolomon"
)

var testCodes = [][2]int{{3, 2}, {4, 2}, {6, 3}, {2, 1}, {10, 4}}

// sizes exercise the library's scalar tail and its SIMD bulk paths.
var testSizes = []int{1, 7, 64, 1000, 4096 + 13, 128 << 10}

func randBlocks(rng *rand.Rand, n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size)
		for j := range out[i] {
			out[i][j] = byte(rng.Uint32())
		}
	}
	return out
}

// eachCode runs fn as a subtest for every code (g, f) of codes and every
// block size of sizes.
func eachCode(t *testing.T, codes [][2]int, sizes []int, fn func(t *testing.T, c *Code, g, f, size int)) {
	for _, gf := range codes {
		g, f := gf[0], gf[1]
		c := mustCode(t, g, f)
		for _, size := range sizes {
			t.Run(fmt.Sprintf("g%d_f%d_size%d", g, f, size), func(t *testing.T) { fn(t, c, g, f, size) })
		}
	}
}

// encode is c.Encode of a copy of data, failing t on an error.
func encode(t *testing.T, c *Code, data [][]byte) [][]byte {
	t.Helper()
	parity, err := c.Encode(cloneAll(data))
	if err != nil {
		t.Fatal(err)
	}
	return parity
}

func mustCode(t testing.TB, g, f int) *Code {
	t.Helper()
	c, err := NewCode(g, f)
	if err != nil {
		t.Fatalf("NewCode(%d, %d): %v", g, f, err)
	}
	return c
}

func cloneAll(bs [][]byte) [][]byte {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		if b != nil {
			out[i] = bytes.Clone(b)
		}
	}
	return out
}

func TestNewCodeRejectsBadParameters(t *testing.T) {
	for _, gf := range [][2]int{{0, 2}, {3, 0}, {-1, 1}, {1, -1}, {200, 57}} {
		if _, err := NewCode(gf[0], gf[1]); err == nil {
			t.Errorf("NewCode(%d, %d) succeeded", gf[0], gf[1])
		}
	}
}

// TestCoefficientsMatchLibraryEncode folds every data block into zeroed
// parity with ApplyDelta and compares with the library's own Encode (a
// fresh encoder, not Code.Encode) and with Code.Encode.
func TestCoefficientsMatchLibraryEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, gf := range testCodes {
		g, f := gf[0], gf[1]
		c := mustCode(t, g, f)
		if c.G() != g || c.F() != f {
			t.Fatalf("G, F = %d, %d, want %d, %d", c.G(), c.F(), g, f)
		}
		lib, err := reedsolomon.New(g, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range testSizes {
			t.Run(fmt.Sprintf("g%d_f%d_size%d", g, f, size), func(t *testing.T) {
				data := randBlocks(rng, g, size)
				shards := append(cloneAll(data), make([][]byte, f)...)
				for k := 0; k < f; k++ {
					shards[g+k] = make([]byte, size)
				}
				if err := lib.Encode(shards); err != nil {
					t.Fatal(err)
				}
				mine := encode(t, c, data)
				var ll reedsolomon.LowLevel
				for k := 0; k < f; k++ {
					folded := make([]byte, size)
					byHand := make([]byte, size)
					for i := 0; i < g; i++ {
						c.ApplyDelta(folded, k, i, data[i])
						ll.GalMulSliceXor(c.Coefficient(k, i), data[i], byHand)
					}
					if !bytes.Equal(folded, shards[g+k]) {
						t.Errorf("parity %d: folded deltas differ from library Encode", k)
					}
					if !bytes.Equal(byHand, shards[g+k]) {
						t.Errorf("parity %d: sum of Coefficient x data differs from library Encode", k)
					}
					if !bytes.Equal(mine[k], shards[g+k]) {
						t.Errorf("parity %d: Code.Encode differs from library Encode", k)
					}
				}
			})
		}
	}
}

func TestEncodeRejectsWrongBlockCount(t *testing.T) {
	c := mustCode(t, 3, 2)
	if _, err := c.Encode(randBlocks(rand.New(rand.NewPCG(1, 1)), 2, 8)); err == nil {
		t.Fatal("Encode of 2 blocks for g=3 succeeded")
	}
}

// TestDeltaMovesParity: applying Delta(old, new) at position i moves parity
// from encode(old stripe) to encode(new stripe), for every position and
// through a sequence of changes.
func TestDeltaMovesParity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	eachCode(t, testCodes, []int{1, 100, 8192}, func(t *testing.T, c *Code, g, f, size int) {
		data := randBlocks(rng, g, size)
		parity := encode(t, c, data)
		for step := 0; step < 3*g; step++ {
			i := step % g
			if step >= g {
				i = rng.IntN(g)
			}
			old := data[i]
			nw := randBlocks(rng, 1, size)[0]
			if step%4 == 3 { // a partial change
				nw = bytes.Clone(old)
				nw[rng.IntN(size)] ^= 0x5a
			}
			oldCopy := bytes.Clone(old)
			delta := Delta(old, nw)
			if !bytes.Equal(old, oldCopy) {
				t.Fatal("Delta modified its input")
			}
			// old XOR delta == new
			back := bytes.Clone(old)
			XORInto(back, delta)
			if !bytes.Equal(back, nw) {
				t.Fatal("old XOR Delta(old, new) != new")
			}
			data[i] = nw
			for k := 0; k < f; k++ {
				c.ApplyDelta(parity[k], k, i, delta)
			}
			want := encode(t, c, data)
			for k := 0; k < f; k++ {
				if !bytes.Equal(parity[k], want[k]) {
					t.Fatalf("step %d (position %d): parity %d after delta != encode(new stripe)", step, i, k)
				}
			}
		}
	})
}

// subsets calls fn with every subset of {0..n-1} of size at most max.
func subsets(n, max int, fn func([]int)) {
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		fn(cur)
		if len(cur) == max {
			return
		}
		for i := start; i < n; i++ {
			rec(i+1, append(cur, i))
		}
	}
	rec(0, nil)
}

func TestReconstructDataEverySubset(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	eachCode(t, [][2]int{{3, 2}, {4, 2}, {6, 3}}, []int{1, 333, 4096}, func(t *testing.T, c *Code, g, f, size int) {
		data := randBlocks(rng, g, size)
		parity := encode(t, c, data)
		full := append(cloneAll(data), parity...)
		tried := 0
		subsets(g+f, f, func(lost []int) {
			tried++
			shards := cloneAll(full)
			for _, i := range lost {
				shards[i] = nil
			}
			present := cloneAll(shards)
			if err := c.ReconstructData(shards); err != nil {
				t.Errorf("lost %v: %v", lost, err)
				return
			}
			for i := 0; i < g; i++ {
				if !bytes.Equal(shards[i], data[i]) {
					t.Errorf("lost %v: data block %d not recovered", lost, i)
				}
			}
			for i := range present {
				if present[i] != nil && !bytes.Equal(shards[i], present[i]) {
					t.Errorf("lost %v: present block %d was modified", lost, i)
				}
			}
		})
		// sum_{k=0..f} C(g+f, k)
		want, binom := 0, 1
		for k := 0; k <= f; k++ {
			want += binom
			binom = binom * (g + f - k) / (k + 1)
		}
		if tried != want {
			t.Errorf("tried %d subsets, want %d", tried, want)
		}
	})
}

func TestReconstructDataTooManyMissing(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, gf := range [][2]int{{3, 2}, {4, 2}, {6, 3}} {
		g, f := gf[0], gf[1]
		c := mustCode(t, g, f)
		data := randBlocks(rng, g, 64)
		parity := encode(t, c, data)
		full := append(cloneAll(data), parity...)
		subsets(g+f, f+1, func(lost []int) {
			if len(lost) != f+1 {
				return
			}
			shards := cloneAll(full)
			for _, i := range lost {
				shards[i] = nil
			}
			// f+1 lost blocks always include a data block, since there
			// are only f parity blocks.
			if err := c.ReconstructData(shards); err == nil {
				t.Errorf("g=%d f=%d: lost %v (more than f) but ReconstructData succeeded", g, f, lost)
			}
		})
		if err := c.ReconstructData(full[:g+f-1]); err == nil {
			t.Errorf("g=%d f=%d: ReconstructData accepted a short stripe", g, f)
		}
	}
}

func TestBlocksGetPutMissing(t *testing.T) {
	b := NewBlocks(8)
	if b.Size() != 8 || b.Len() != 0 {
		t.Fatalf("Size, Len = %d, %d", b.Size(), b.Len())
	}
	if got := b.Get(3); !bytes.Equal(got, make([]byte, 8)) {
		t.Fatalf("missing block = %x, want zeros", got)
	}
	b.Put(3, []byte("abcdefgh"))
	if got := b.Get(3); string(got) != "abcdefgh" {
		t.Fatalf("Get = %q", got)
	}
	m := b.Mutable(5)
	if !bytes.Equal(m, make([]byte, 8)) || len(m) != 8 {
		t.Fatalf("Mutable of a missing block = %x", m)
	}
	m[0] = 1
	if b.Get(5)[0] != 1 {
		t.Fatal("change through Mutable not visible")
	}
	var ids []uint64
	b.IDs(func(id uint64) { ids = append(ids, id) })
	if len(ids) != 2 || b.Len() != 2 {
		t.Fatalf("IDs = %v, Len = %d, want blocks 3 and 5", ids, b.Len())
	}
}

func TestBlocksCloneIndependent(t *testing.T) {
	orig := NewBlocks(4)
	orig.Put(1, []byte{1, 1, 1, 1})
	orig.Put(2, []byte{2, 2, 2, 2})
	orig.Mutable(3)[0] = 3
	h0 := orig.Hash()

	clone := orig.Clone()
	if clone.Hash() != h0 {
		t.Fatal("clone hashes differently from the original")
	}

	// Change the clone in place: the original must not see it.
	clone.Mutable(1)[0] = 9
	clone.Mutable(3)[1] = 9
	if !bytes.Equal(orig.Get(1), []byte{1, 1, 1, 1}) || !bytes.Equal(orig.Get(3), []byte{3, 0, 0, 0}) {
		t.Fatalf("changing the clone changed the original: %x %x", orig.Get(1), orig.Get(3))
	}
	if orig.Hash() != h0 {
		t.Fatal("changing the clone changed the original's hash")
	}
	if clone.Hash() == h0 {
		t.Fatal("changing the clone did not change its hash")
	}

	// Change the original in place: the clone must not see it.
	orig.Mutable(2)[3] = 7
	if !bytes.Equal(clone.Get(2), []byte{2, 2, 2, 2}) {
		t.Fatalf("changing the original changed the clone: %x", clone.Get(2))
	}
	// A Put on either side stays on that side.
	orig.Put(4, []byte{4, 4, 4, 4})
	if !bytes.Equal(clone.Get(4), make([]byte, 4)) {
		t.Fatal("Put on the original reached the clone")
	}

	// A clone of a clone is independent of both.
	cc := clone.Clone()
	cc.Mutable(1)[1] = 5
	if clone.Get(1)[1] != 1 || orig.Get(1)[1] != 1 {
		t.Fatal("changing a clone of a clone changed its ancestors")
	}
	clone.Mutable(2)[0] = 6
	if cc.Get(2)[0] != 2 {
		t.Fatal("changing a clone changed its own clone")
	}

	// The clone's hash is the hash of its contents.
	fresh := NewBlocks(4)
	for _, id := range []uint64{1, 2, 3} {
		fresh.Put(id, bytes.Clone(clone.Get(id)))
	}
	if fresh.Hash() != clone.Hash() {
		t.Fatal("clone hash differs from a fresh map with the same contents")
	}
}

func TestBlocksHashCanonical(t *testing.T) {
	contents := map[uint64][]byte{
		0:  {1, 2, 3, 4},
		7:  {0, 0, 0, 9},
		42: {5, 5, 5, 5},
	}
	a := NewBlocks(4)
	for _, id := range []uint64{0, 7, 42} {
		a.Put(id, bytes.Clone(contents[id]))
	}
	b := NewBlocks(4)
	for _, id := range []uint64{42, 0, 7} {
		copy(b.Mutable(id), contents[id])
		b.Hash() // hash in between, so b's hash is built incrementally
	}
	if a.Hash() != b.Hash() {
		t.Fatal("equal contents built in different orders hash differently")
	}

	// Writing then undoing a change restores the hash.
	h := a.Hash()
	a.Mutable(7)[0] = 1
	if a.Hash() == h {
		t.Fatal("hash did not change when contents changed")
	}
	a.Mutable(7)[0] = 0
	if a.Hash() != h {
		t.Fatal("hash did not return after the change was undone")
	}

	// Same bytes under a different id is a different state.
	c := NewBlocks(4)
	c.Put(0, bytes.Clone(contents[0]))
	c.Put(7, bytes.Clone(contents[42]))
	c.Put(42, bytes.Clone(contents[7]))
	if c.Hash() == a.Hash() {
		t.Fatal("swapping two blocks' contents did not change the hash")
	}

	// A zero block hashes like a missing one.
	empty := NewBlocks(4).Hash()
	z := NewBlocks(4)
	z.Put(3, make([]byte, 4))
	z.Mutable(9)
	if z.Hash() != empty {
		t.Fatal("zero blocks hash differently from missing blocks")
	}
	a2 := NewBlocks(4)
	for id, v := range contents {
		a2.Put(id, bytes.Clone(v))
	}
	a2.Put(100, make([]byte, 4))
	if a2.Hash() != a.Hash() {
		t.Fatal("an extra zero block changed the hash")
	}
	// Zeroing a block makes it hash as missing.
	clear(a2.Mutable(42))
	d := NewBlocks(4)
	d.Put(0, bytes.Clone(contents[0]))
	d.Put(7, bytes.Clone(contents[7]))
	if a2.Hash() != d.Hash() {
		t.Fatal("a zeroed block hashes differently from a missing one")
	}
}
