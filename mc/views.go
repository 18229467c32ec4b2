package mc

import (
	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/witness"
)

// serverView is what the predicates read of one server. It is built once
// per node instance (instances are shared by every state that holds the
// node), so checking a state allocates nothing for nodes seen before.
type serverView struct {
	ops  []data.OpView // a data server's pending_ops
	held []backup.Held // a parity server's or witness's PREPAREs, in key order
}

// view returns node i's view.
func (s *State) view(i int) *serverView {
	in := s.nodes[i]
	if v := in.view.Load(); v != nil {
		return v
	}
	v := &serverView{}
	switch n := in.nd.(type) {
	case *data.Server:
		v.ops = n.Ops()
	case *parity.Server:
		v.held = n.Prepares()
	case *witness.Server:
		v.held = n.Prepares()
	}
	in.view.Store(v) // a racing worker may store an equal view
	return v
}

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

// roles gives, per machine, the node index of its data server, parity
// server and witness (-1 where there is none).
type roles struct{ data, parity, witness []int }

func roleIndex(addrs []node.Addr) roles {
	var r roles
	for i, a := range addrs {
		role, m, err := msg.ParseAddr(a)
		var xs *[]int
		switch {
		case err != nil:
			continue
		case role == "data":
			xs = &r.data
		case role == "parity":
			xs = &r.parity
		case role == "witness":
			xs = &r.witness
		default:
			continue
		}
		for len(*xs) <= m {
			*xs = append(*xs, -1)
		}
		(*xs)[m] = i
	}
	return r
}

// at is xs[m], or -1.
func at(xs []int, m int) int {
	if m < len(xs) {
		return xs[m]
	}
	return -1
}
