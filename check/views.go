package check

import (
	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/witness"
)

// serverView is what the predicates read of one server. It is built once
// per node value (mc.State.View), so checking a state allocates nothing
// for nodes seen before.
type serverView struct {
	ops  []data.OpView // a data server's pending_ops
	held []backup.Held // a parity server's or witness's PREPAREs, in key order
}

func buildView(n node.Node) any {
	v := &serverView{}
	switch n := n.(type) {
	case *data.Server:
		v.ops = n.Ops()
	case *parity.Server:
		v.held = n.Prepares()
	case *witness.Server:
		v.held = n.Prepares()
	}
	return v
}

// view returns node i's view.
func view(s *mc.State, i int) *serverView { return s.View(i, buildView).(*serverView) }

// holds reports whether the view's PREPAREs include (shard, opNum, st)
// from incarnation primary of the shard's data server.
func (v *serverView) holds(shard int, primary, opNum uint64, st int) bool {
	for _, h := range v.held {
		if h.P.Shard == shard && h.P.Primary == primary && h.P.OpNum == opNum && h.P.Stripe == st {
			return true
		}
	}
	return false
}
