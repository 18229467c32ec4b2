package runtime

import (
	"cmp"
	"time"

	"github.com/amalgam-store/amalgam/wire"
)

// MaxRebuildRun bounds MachineOptions.RebuildRun: a snapshot answer
// carries one block per stripe of the run, so a run of wire.MaxTxnOps
// stripes stays within wire.MaxMessageSize.
const MaxRebuildRun = wire.MaxTxnOps

// DefaultRebuildRunBytes sets MachineOptions.RebuildRun's default: as many
// stripes as make this many bytes of blocks per answer (64 stripes of 4
// KiB blocks, 2 of 128 KiB; docs/performance.md, "Recovery").
const DefaultRebuildRunBytes = 256 << 10

// rebuildRun is the stripes per snapshot run that servers use: n (0: the
// default for blocks of blockSize bytes), between 1 and MaxRebuildRun.
func rebuildRun(n, blockSize int) int {
	return min(max(cmp.Or(n, DefaultRebuildRunBytes/max(blockSize, 1)), 1), MaxRebuildRun)
}

// DefaultRebuildBusyRate is MachineOptions.RebuildBusyRate's default, in
// blocks per second: while a data server has client work its background
// runs keep to this rate (a 2 ms pause per stripe: 2 MB/s of 4 KiB blocks,
// above the benchmark cluster's durable write rate, and no limit in
// practice for 128 KiB blocks, whose rebuild already leaves the clients
// most of their throughput; docs/performance.md, "Recovery"). Runs for
// held requests are not paced.
const DefaultRebuildBusyRate = 500

// rebuildBusyPause is the pause per stripe that keeps a busy data
// server's background rebuild to rate blocks per second (0:
// DefaultRebuildBusyRate; negative: no pause).
func rebuildBusyPause(rate float64) time.Duration {
	if rate < 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / cmp.Or(rate, DefaultRebuildBusyRate))
}
