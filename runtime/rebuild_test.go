package runtime

import (
	"testing"
	"time"
)

// Snapshot runs are 256 KiB of blocks by default, between 1 and
// MaxRebuildRun stripes, and at most half of wire.MaxMessageSize of blocks;
// a held request's run (0: as long as a background run) is bounded alike.
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
	held := []struct{ n, blockSize, want int }{{0, 4096, 0}, {8, 4096, 8}, {600, 4096, MaxRebuildRun}, {100, 128 << 10, 68}}
	for _, c := range held {
		if got := heldRun(c.n, c.blockSize); got != c.want {
			t.Errorf("heldRun(%d, %d) = %d, want %d", c.n, c.blockSize, got, c.want)
		}
	}
}

// The busy pace is 250 stripes a second by default, slower where that is
// more than 16 MiB of blocks a second; a set rate is kept as given.
func TestRebuildBusyPause(t *testing.T) {
	cases := []struct {
		rate      float64
		blockSize int
		want      time.Duration
	}{
		{0, 4096, 4 * time.Millisecond}, {0, 64 << 10, 4 * time.Millisecond},
		{0, 128 << 10, time.Second / 128}, {0, 1 << 20, time.Second / 16},
		{1000, 128 << 10, time.Millisecond}, {-1, 4096, 0},
	}
	for _, c := range cases {
		if got := rebuildBusyPause(c.rate, c.blockSize); got != c.want {
			t.Errorf("rebuildBusyPause(%v, %d) = %v, want %v", c.rate, c.blockSize, got, c.want)
		}
	}
}
