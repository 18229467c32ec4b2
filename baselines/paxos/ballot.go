// Package paxos holds the parts of Multi-Paxos that the baselines
// baselines/shardedpaxos and baselines/rspaxos share and that do not depend on what
// a log slot holds: ballots, roles and vote sets, timer settings, member
// placement and addresses, the window of log slots and the client table.
// Each baseline keeps its own values, messages and handlers.
//
// Like the baselines, the package is deterministic: no I/O, clock or
// concurrency.
package paxos

import (
	"fmt"

	"github.com/amalgam-store/amalgam/node"
)

// Ballot is a proposal number: rounds are totally ordered, and the leading
// member breaks ties, so every ballot belongs to one member. The zero
// ballot is member 0's initial leadership, which needs no phase 1: every
// acceptor starts promised to it with nothing accepted.
type Ballot struct {
	Round  uint64
	Leader int
}

// Less orders ballots.
func (b Ballot) Less(o Ballot) bool {
	if b.Round != o.Round {
		return b.Round < o.Round
	}
	return b.Leader < o.Leader
}

func (b Ballot) String() string { return fmt.Sprintf("%d.%d", b.Round, b.Leader) }

// Hash writes the ballot into h.
func (b Ballot) Hash(h *node.Hasher) {
	h.Uint64(b.Round)
	h.Int(b.Leader)
}
