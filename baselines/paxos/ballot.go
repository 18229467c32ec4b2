// Package paxos is the Multi-Paxos replica core that the baselines
// baselines/shardedpaxos and baselines/rspaxos share: ballots, phases 1
// and 2, heartbeats and retransmissions, catch-up (Learn), garbage
// collection, the client table, member placement and the messages. A
// baseline instantiates the core with its own value type (a whole
// transaction, or one erasure-coded piece of a block) and gives it an App
// for what differs: its requests, its state machine and how a new leader
// recovers a slot from the phase 1 reports.
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
