package client

import (
	"errors"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/wire"
)

func TestRangeGroups(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 200, BlockSize: 100}
	r, err := RangeOf(l, 10, 509)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ off, n int64 }{{0, 1}, {0, 100}, {50, 100}, {99, 2}, {0, 50000}, {12345, 20000}, {49999, 1}} {
		buf := make([]byte, tc.n)
		groups, err := r.groups(l, buf, tc.off)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		// The segments cover the bytes exactly once, in order within the
		// buffer, each inside one block, each group on one shard.
		covered := int64(0)
		for _, g := range groups {
			if len(g) == 0 || len(g) > wire.MaxTxnOps {
				t.Fatalf("%+v: a group of %d segments", tc, len(g))
			}
			for _, s := range g {
				if l.Shard(s.block) != l.Shard(g[0].block) {
					t.Fatalf("%+v: a group spans shards", tc)
				}
				start := int64(cap(buf) - cap(s.buf))
				byteOff := tc.off + start
				if s.block != r.First+uint64(byteOff/100) || s.offset != int(byteOff%100) || s.offset+len(s.buf) > 100 {
					t.Fatalf("%+v: segment block %d offset %d length %d for byte %d", tc, s.block, s.offset, len(s.buf), byteOff)
				}
				covered += int64(len(s.buf))
			}
		}
		if covered != tc.n {
			t.Fatalf("%+v: segments cover %d bytes", tc, covered)
		}
	}
	if _, err := r.groups(l, make([]byte, 2), r.Size()-1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bytes past the range: %v", err)
	}
	if _, err := RangeOf(l, 0, l.NumBlocks()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a range past the last block: %v", err)
	}
}
