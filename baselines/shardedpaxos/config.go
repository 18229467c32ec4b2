// Package shardedpaxos is the ShardedPaxos baseline of the Amalgam
// evaluation (thesis 2.1, 2.2, 3.6): one Multi-Paxos group per shard, with a
// stable leader, f+1 full replicas and f acceptor-only replication witnesses
// per group (the heterogeneous deployment of thesis 2.2). Client
// transactions (msg.Request) are committed to the group's log as stored
// procedures and every full replica executes them in slot order with
// msg.Execute, so the baseline offers exactly Amalgam's operations.
//
// Shards and block numbering are Amalgam's: a block belongs to group
// Layout.Shard(block), so the same scripts and the same linearizability
// model (workload.Model) apply. The nodes are deterministic state machines
// on the node API, like Amalgam's servers.
package shardedpaxos

import (
	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/node"
)

// Config describes a ShardedPaxos deployment (paxos.Deployment).
type Config paxos.Deployment

// Full is the number of full replicas per group: f+1.
func (c Config) Full() int { return c.Layout.F + 1 }

// Members is the number of acceptors per group: f+1 full replicas and f
// witnesses, 2f+1 in all. Members 0..f are full replicas, f+1..2f witnesses.
func (c Config) Members() int { return 2*c.Layout.F + 1 }

// Quorum is the phase 1 and phase 2 quorum size: f+1 of the 2f+1 members.
func (c Config) Quorum() int { return c.Layout.F + 1 }

// Groups is the number of Paxos groups, one per shard.
func (c Config) Groups() int { return c.Layout.N }

// IsFull reports whether member i is a full replica (not a witness).
func (c Config) IsFull(i int) bool { return i <= c.Layout.F }

// params is what the paxos core needs of the configuration.
func (c Config) params() paxos.Params {
	return paxos.Params{Members: c.Members(), Full: c.Full(), Quorum: c.Quorum(), Timing: c.Timing, Addr: c.Addr}
}

// Validate reports the first problem with the configuration.
func (c Config) Validate() error {
	return c.params().Check("shardedpaxos", c.Layout)
}

// Machines is the number of machines a deployment uses (paxos.Machines).
func (c Config) Machines() int { return paxos.Machines(c.Layout.N, c.Members()) }

// Machine is the machine hosting member i of group g (paxos.Machine):
// member 0 of group g is on machine g.
func (c Config) Machine(g, i int) int { return paxos.Machine(g, i, c.Machines()) }

// Addr is the address of member i of group g: "sp<g>.<i>/<machine>".
func (c Config) Addr(g, i int) node.Addr { return paxos.Addr("sp", g, i, c.Machine(g, i)) }

// Nodes builds every replica of the listed groups (all groups when groups
// is nil), keyed by address.
func Nodes(cfg Config, groups []int) map[node.Addr]node.Node {
	return paxos.Nodes(cfg.params(), cfg.Groups(), groups, func(g, i int) node.Node { return NewReplica(cfg, g, i) })
}
