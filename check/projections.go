package check

import (
	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/witness"
	"github.com/amalgam-store/amalgam/workload"
)

// What the predicates read, for mc's local model checking (LMC): the
// nodes (Reads) and, per node, a hash of the fields the predicate looks
// at (Key). LMC builds one system state per combination of distinct keys
// of the nodes read, so a key that leaves out what the predicate ignores
// (timers, rebuild progress, client tables) builds fewer.

// isServer: a data, parity or witness server.
func isServer(_ node.Addr, n node.Node) bool {
	switch n.(type) {
	case *data.Server, *parity.Server, *witness.Server:
		return true
	}
	return false
}

// isStore: a server or the reconfiguration service (whose configuration
// the predicates compare the servers' with).
func isStore(a node.Addr, n node.Node) bool {
	_, rc := n.(*reconfig.Service)
	return rc || isServer(a, n)
}

// projection reads the nodes reads selects, keyed by key.
func projection(reads func(node.Addr, node.Node) bool, key func(h *node.Hasher, n node.Node)) mc.Projection {
	return mc.Projection{Reads: reads, Key: func(n node.Node) uint64 {
		h := node.NewHasher()
		key(h, n)
		return h.Sum()
	}}
}

// parityReads is parity consistency's: per stripe, the blocks a server
// holds and whether the stripe is busy or degraded there; the
// configuration numbers.
func parityReads(l erasure.Layout) mc.Projection {
	return projection(isStore, func(h *node.Hasher, n node.Node) {
		var block func(st int) []byte // the server's block of stripe st
		var busy func(st int) bool
		switch x := n.(type) {
		case *data.Server:
			block = func(st int) []byte {
				for pos := 0; pos < l.G; pos++ {
					if l.DataMachine(st, pos) == x.Machine() {
						return x.Block(l.Block(st, pos))
					}
				}
				return nil
			}
			busy = x.PendingOn
		case *parity.Server:
			block, busy = x.Block, x.HoldsOn
		case *witness.Server:
			busy = x.HoldsOn
		case *reconfig.Service:
			h.Uint64(x.Config().Num)
			return
		default:
			return
		}
		h.Uint64(n.(interface{ ConfigNum() uint64 }).ConfigNum())
		d, degrades := n.(interface{ Degraded(st int) bool })
		for st := 0; st < l.Stripes; st++ {
			if block != nil {
				h.OptBytes(block(st))
			}
			h.Bool(busy(st))
			h.Bool(degrades && d.Degraded(st))
		}
	})
}

// commitReads is 3.4.1's: a data server's primary, pending operations
// (op number, committed, stripes) and the backups it is replacing; a
// backup's PREPAREs held (which operation, applied) and, for a parity
// server, the primaries and op numbers it knows and its degraded
// stripes; the configuration's data incarnations.
func commitReads(l erasure.Layout) mc.Projection {
	return projection(isStore, func(h *node.Hasher, n node.Node) {
		switch x := n.(type) {
		case *data.Server:
			h.Uint64(x.Primary())
			for _, op := range x.Ops() {
				h.Uint64(op.OpNum)
				h.Bool(op.Committed)
				for _, st := range op.Stripes {
					h.Int(st)
				}
			}
			for m := 0; m < l.N; m++ {
				h.Bool(x.Replacing(msg.ParityAddr(m)))
				h.Bool(x.Replacing(msg.WitnessAddr(m)))
			}
		case *parity.Server:
			heldKey(h, x.Prepares())
			for m := 0; m < l.N; m++ {
				h.Uint64(x.PrimaryOf(m))
				h.Uint64(x.OpNum(m))
			}
			for st := 0; st < l.Stripes; st++ {
				h.Bool(x.Degraded(st))
			}
		case *witness.Server:
			heldKey(h, x.Prepares())
		case *reconfig.Service:
			for _, inc := range x.Config().Data {
				h.Uint64(inc)
			}
		}
	})
}

// heldKey hashes which operations a backup's PREPAREs are for.
func heldKey(h *node.Hasher, held []backup.Held) {
	for _, x := range held {
		h.Int(x.P.Shard)
		h.Uint64(x.P.Primary)
		h.Uint64(x.P.OpNum)
		h.Int(x.P.Stripe)
		h.Uint64(x.P.Client)
		h.Uint64(x.P.Seq)
		h.Bool(x.Applied)
	}
}

// slcReads is SLC's: each server's incarnation and degraded stripes, and
// the configuration's incarnations.
func slcReads(l erasure.Layout) mc.Projection {
	reads := func(_ node.Addr, n node.Node) bool {
		switch n.(type) {
		case *data.Server, *parity.Server, *reconfig.Service:
			return true
		}
		return false
	}
	return projection(reads, func(h *node.Hasher, n node.Node) {
		type holder interface {
			Degraded(st int) bool
			Incarnation() uint64
		}
		switch x := n.(type) {
		case holder:
			h.Uint64(x.Incarnation())
			for st := 0; st < l.Stripes; st++ {
				h.Bool(x.Degraded(st))
			}
		case *reconfig.Service:
			c := x.Config()
			for m := range c.Data {
				h.Uint64(c.Data[m])
				h.Uint64(c.Parity[m])
			}
		}
	})
}

// requests is at-most-once's: the servers' executions (request and op
// number, by data server incarnation) and the clients' replies. It also
// reads the replies in flight and the PREPAREs on streams; a system state
// built from local states has none, so LMC judges the nodes' own states
// there and the replayed execution decides.
var requests = projection(func(a node.Addr, n node.Node) bool { _, c := n.(mc.Client); return c || isServer(a, n) },
	func(h *node.Hasher, n node.Node) {
		switch x := n.(type) {
		case *data.Server:
			h.Int(x.Machine())
			h.Uint64(x.Primary())
			for _, op := range x.Ops() {
				h.Uint64(op.Client)
				h.Uint64(op.Seq)
				h.Uint64(op.OpNum)
			}
		case *parity.Server:
			heldKey(h, x.Prepares())
		case *witness.Server:
			heldKey(h, x.Prepares())
		case *workload.Client:
			for _, r := range x.Replies() {
				h.Uint64(replyHash(r))
			}
		default:
			h.Uint64(n.Hash())
		}
	})
