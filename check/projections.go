package check

import (
	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/witness"
)

// What the predicates read, for mc's local model checking (LMC builds
// system states only from these nodes).

// isServer: a data, parity or witness server.
func isServer(_ node.Addr, n node.Node) bool {
	switch n.(type) {
	case *data.Server, *parity.Server, *witness.Server:
		return true
	}
	return false
}

// serverState: parity consistency, 3.4.1 and SLC read the servers only
// (parity consistency also the streams, to skip busy stripes: a system
// state built from local states has nothing in flight, so it judges
// every stripe, and the replayed state decides).
var serverState = mc.Projection{Reads: isServer}

// requests: at-most-once reads the servers, the clients and the replies
// in flight; a system state built from local states has none in flight,
// so LMC sees only the conflicts among the nodes' own states.
var requests = mc.Projection{
	Reads: func(a node.Addr, n node.Node) bool { _, c := n.(mc.Client); return c || isServer(a, n) },
}
