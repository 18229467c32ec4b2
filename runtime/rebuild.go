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
// blocks per second: while a data server has client work, the start of a
// background run of k stripes delays the next start by k / 250 s (4 ms a
// stripe: about 1 MB/s of 4 KiB blocks, besides the runs for held
// requests, which are not paced; 32 MB/s of 128 KiB blocks, above what
// their loaded rebuild reaches, whose runs still overlap within the
// window). docs/performance.md, "Recovery".
const DefaultRebuildBusyRate = 250

// rebuildBusyPause is the pause per stripe that keeps a busy data
// server's background rebuild to rate blocks per second (0:
// DefaultRebuildBusyRate; negative: no pause).
func rebuildBusyPause(rate float64) time.Duration {
	if rate < 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / cmp.Or(rate, DefaultRebuildBusyRate))
}
