package runtime

import "testing"

// Snapshot runs are 256 KiB of blocks by default, between 1 and
// MaxRebuildRun stripes, and at most half of wire.MaxMessageSize of blocks.
func TestRebuildRun(t *testing.T) {
	cases := []struct{ n, blockSize, want int }{
		{0, 4096, 64}, {0, 128 << 10, 2}, {0, 1 << 20, 1}, {3, 4096, 3}, {600, 4096, MaxRebuildRun},
		{100, 128 << 10, 68}, {100, 1 << 20, 64},
	}
	for _, c := range cases {
		if got := rebuildRun(c.n, c.blockSize); got != c.want {
			t.Errorf("rebuildRun(%d, %d) = %d, want %d", c.n, c.blockSize, got, c.want)
		}
	}
}
