// Package rspaxos is the RSPaxos baseline of the Amalgam evaluation
// (thesis 2.4, 3.6; Mu et al., "When Paxos meets erasure code"): one
// Multi-Paxos group per shard of 3f+1 replicas with quorums of 2f+1. Each
// value written is split by a Reed-Solomon code into f+1 data pieces and
// 2f parity pieces, one piece per replica, so every replica stores 1/(f+1)
// of each block; any two quorums share f+1 replicas and so f+1 pieces,
// enough to rebuild a chosen value.
//
// The service offers whole-block GET and PUT only. A GET is ordered in the
// log like a PUT; when replicas execute it they send the leader their
// piece of the block, and the leader decodes f+1 of them. Every other
// operation (partial reads and writes, xor, add, cas, transactions) is run
// by the Client as GETs followed by PUTs, as the thesis does: without
// isolation, so concurrent read-modify-writes are not linearizable.
//
// Shards and block numbering are Amalgam's (group g serves
// Layout.ShardBlocks(g)), and the nodes are deterministic state machines
// on the node API.
package rspaxos

import (
	"fmt"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/node"
)

// Config describes an RSPaxos deployment (paxos.Deployment).
type Config paxos.Deployment

// Members is the group size, 3f+1.
func (c Config) Members() int { return 3*c.Layout.F + 1 }

// Quorum is the phase 1 and phase 2 quorum size, 2f+1.
func (c Config) Quorum() int { return 2*c.Layout.F + 1 }

// DataPieces is the number of pieces a value is rebuilt from, f+1.
func (c Config) DataPieces() int { return c.Layout.F + 1 }

// PieceSize is the size of one piece: a block split f+1 ways, rounded up.
func (c Config) PieceSize() int {
	k := c.DataPieces()
	return (c.Layout.BlockSize + k - 1) / k
}

// Groups is the number of Paxos groups, one per shard.
func (c Config) Groups() int { return c.Layout.N }

// params is what the paxos core needs of the configuration: every member
// is a full replica.
func (c Config) params() paxos.Params {
	return paxos.Params{Members: c.Members(), Full: c.Members(), Quorum: c.Quorum(), Timing: c.Timing, Addr: c.Addr}
}

// Validate reports the first problem with the configuration.
func (c Config) Validate() error {
	return c.params().Check("rspaxos", c.Layout)
}

// NewCode builds the group code: f+1 data pieces and 2f parity pieces.
func (c Config) NewCode() (*erasure.Code, error) {
	return erasure.NewCode(c.DataPieces(), 2*c.Layout.F)
}

// Machines is the number of machines a deployment uses (paxos.Machines).
func (c Config) Machines() int { return paxos.Machines(c.Layout.N, c.Members()) }

// Machine is the machine hosting member i of group g (paxos.Machine):
// member 0 of group g is on machine g.
func (c Config) Machine(g, i int) int { return paxos.Machine(g, i, c.Machines()) }

// Addr is the address of member i of group g: "rs<g>.<i>/<machine>".
func (c Config) Addr(g, i int) node.Addr { return paxos.Addr("rs", g, i, c.Machine(g, i)) }

// ParseAddr returns the group and member of a replica address.
func ParseAddr(a node.Addr) (g, i int, err error) {
	if g, i, ok := paxos.ParseAddr("rs", a); ok {
		return g, i, nil
	}
	return 0, 0, fmt.Errorf("rspaxos: bad replica address %q", a)
}

// Nodes builds every replica of the listed groups (all groups when groups
// is nil), keyed by address, sharing one code.
func Nodes(cfg Config, groups []int) (map[node.Addr]node.Node, error) {
	code, err := cfg.NewCode()
	if err != nil {
		return nil, err
	}
	return paxos.Nodes(cfg.params(), cfg.Groups(), groups, func(g, i int) node.Node { return NewReplica(cfg, code, g, i) }), nil
}
