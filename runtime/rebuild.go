package runtime

import (
	"cmp"
	"time"

	"github.com/amalgam-store/amalgam/wire"
)

// MaxRebuildRun bounds MachineOptions.RebuildRun. A snapshot answer
// carries one block per stripe of the run, so runs are also bounded to
// half of wire.MaxMessageSize of blocks (maxRebuildRun): 512 stripes of
// 4 KiB blocks, 68 of 128 KiB.
const MaxRebuildRun = 512

// maxRebuildRun is the most stripes per run for blocks of blockSize bytes:
// an answer of that many blocks stays within half of wire.MaxMessageSize
// (the unordered sender's batch limit), and within MaxRebuildRun.
func maxRebuildRun(blockSize int) int {
	bs := max(blockSize, 1)
	return min(max(wire.MaxMessageSize(bs)/2/bs, 1), MaxRebuildRun)
}

// DefaultRebuildRunBytes sets MachineOptions.RebuildRun's default: as many
// stripes as make this many bytes of blocks per answer (64 stripes of 4
// KiB blocks, 2 of 128 KiB; docs/performance.md, "Recovery").
const DefaultRebuildRunBytes = 256 << 10

// rebuildRun is the stripes per snapshot run that servers use: n (0: the
// default for blocks of blockSize bytes), between 1 and MaxRebuildRun.
func rebuildRun(n, blockSize int) int {
	return min(max(cmp.Or(n, DefaultRebuildRunBytes/max(blockSize, 1)), 1), maxRebuildRun(blockSize))
}

// DefaultRebuildBusyRate is MachineOptions.RebuildBusyRate's default, in
// blocks per second: while a data server has client work, its rebuild as
// a whole keeps to 250 stripes a second and to DefaultRebuildBusyBytes of
// blocks a second, whichever is slower (4 ms a stripe, about 1 MB/s, of 4
// KiB blocks; 128 stripes, 16 MiB, a second of 128 KiB blocks): the start
// of a background run of k stripes delays the next start by k times the
// pause per stripe, plus one pause per stripe of the runs for held
// requests started meanwhile, which are never delayed themselves
// (data.Server.SetRebuildBusyPause). docs/performance.md, "Recovery".
const DefaultRebuildBusyRate = 250

// DefaultRebuildBusyBytes caps the default busy rate in bytes of blocks
// per second, so that large blocks, whose stripes cost the clients more,
// are paced by what they move.
const DefaultRebuildBusyBytes = 16 << 20

// rebuildBusyPause is the pause per stripe that keeps a busy data
// server's background rebuild of blocks of blockSize bytes to rate blocks
// per second (0: DefaultRebuildBusyRate, capped at
// DefaultRebuildBusyBytes; negative: no pause).
func rebuildBusyPause(rate float64, blockSize int) time.Duration {
	if rate < 0 {
		return 0
	}
	if rate == 0 {
		rate = min(DefaultRebuildBusyRate, float64(DefaultRebuildBusyBytes)/float64(max(blockSize, 1)))
	}
	return time.Duration(float64(time.Second) / rate)
}

// heldRun is the stripes per snapshot run for a held request of blocks
// of blockSize bytes: n, within the same bounds as a background run (0:
// as long as a background run).
func heldRun(n, blockSize int) int { return min(max(n, 0), maxRebuildRun(blockSize)) }
