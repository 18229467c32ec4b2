package recovery

import (
	"slices"
	"testing"
)

// Flags round-trip through their packed encoding, whatever their number,
// and a record of the wrong length is refused.
func TestFlagsEncoding(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 64, 1000} {
		f := make(Flags, n)
		for i := range f {
			f[i] = i%3 == 0 || i == n-1
		}
		b, err := f.GobEncode()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 8+(n+7)/8 {
			t.Fatalf("%d flags encode to %d bytes, want %d", n, len(b), 8+(n+7)/8)
		}
		var g Flags
		if err := g.GobDecode(b); err != nil || !slices.Equal(g, f) || len(g) != n {
			t.Fatalf("%d flags: decoded %v (%v), want %v", n, g, err, f)
		}
		if n > 0 {
			if err := g.GobDecode(b[:len(b)-1]); err == nil {
				t.Fatalf("%d flags: a truncated record decoded", n)
			}
		}
	}
}
