package check

import (
	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/witness"
	"github.com/amalgam-store/amalgam/workload"
)

// Amalgam builds the nodes of an Amalgam cluster in configuration cfg: a
// data, parity and witness server per machine and one workload client per
// script (client i at "client/i" with id i+1).
func Amalgam(cfg msg.Config, code *erasure.Code, scripts [][][]msg.Op) map[node.Addr]node.Node {
	nodes := map[node.Addr]node.Node{}
	for m := 0; m < cfg.Layout.N; m++ {
		nodes[msg.DataAddr(m)] = data.New(cfg, m)
		nodes[msg.ParityAddr(m)] = parity.New(cfg, m, code)
		if cfg.Layout.W > 0 {
			nodes[msg.WitnessAddr(m)] = witness.New(cfg, m)
		}
	}
	for i, sc := range scripts {
		nodes[msg.ClientAddr(i)] = workload.NewClient(uint64(i+1), cfg.Layout, sc)
	}
	return nodes
}

// Restorer makes the server a restarted process starts as, before it
// restores what it persisted: the constructor the runtime calls, with
// the initial configuration and the crashed server's machine (Restore
// reads the configuration it was in from its store). It is what
// mc.State.Restartable needs for Amalgam's servers.
func Restorer(cfg0 msg.Config, code *erasure.Code) func(node.Addr, node.Node) node.Persistent {
	return func(_ node.Addr, n node.Node) node.Persistent {
		switch n := n.(type) {
		case *data.Server:
			return data.New(cfg0, n.Machine())
		case *parity.Server:
			return parity.New(cfg0, n.Machine(), code)
		case *witness.Server:
			return witness.New(cfg0, n.Machine())
		}
		return nil
	}
}
