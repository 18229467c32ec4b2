package runtime

import (
	"cmp"
	"reflect"
	"sync"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// DefaultRebuildRun is MachineOptions.RebuildRun's default and its upper
// bound: a snapshot answer carries one block per stripe of the run, so a
// run of wire.MaxTxnOps stripes stays within wire.MaxMessageSize.
const DefaultRebuildRun = wire.MaxTxnOps

// rebuildRun is the stripes per snapshot run that servers use: n (0:
// DefaultRebuildRun), at most DefaultRebuildRun, and 1 while the wire
// encoding does not carry runs.
func rebuildRun(n int) int {
	if !wireCarriesRuns() {
		return 1
	}
	return min(cmp.Or(n, DefaultRebuildRun), DefaultRebuildRun)
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
