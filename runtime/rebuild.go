package runtime

import (
	"cmp"

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
