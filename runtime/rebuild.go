package runtime

import (
	"cmp"
	"reflect"
	"sync"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
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
// default for blocks of blockSize bytes), between 1 and MaxRebuildRun, and
// 1 while the wire encoding does not carry runs.
func rebuildRun(n, blockSize int) int {
	if !wireCarriesRuns() {
		return 1
	}
	return min(max(cmp.Or(n, DefaultRebuildRunBytes/max(blockSize, 1)), 1), MaxRebuildRun)
}

// wireCarriesRuns reports whether the snapshot messages' run fields (Count,
// Rest, with a nil block among them) survive the wire encoding.
var wireCarriesRuns = sync.OnceValue(func() bool {
	rest := [][]byte{{2}, nil}
	for _, m := range []node.Message{
		msg.StripeSnapshot{Count: 2},
		msg.SnapshotMarker{Count: 2},
		msg.SnapshotData{Block: []byte{1}, Rest: rest},
		msg.SnapshotParity{Block: []byte{1}, Rest: rest},
	} {
		p, err := wire.MessageToProto(m)
		if err != nil {
			return false
		}
		back, err := wire.MessageFromProto(p)
		if err != nil || !reflect.DeepEqual(back, m) {
			return false
		}
	}
	return true
})
