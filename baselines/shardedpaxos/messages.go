package shardedpaxos

import (
	"fmt"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Ballot is a proposal number (paxos.Ballot).
type Ballot = paxos.Ballot

// Value is what a log slot holds: a client transaction, run as a stored
// procedure by every full replica, or a no-op that fills a hole after a
// leader change. Values are immutable once built.
type Value struct {
	Noop   bool
	Client uint64
	Seq    uint64
	From   node.Addr // the client's address, for the reply
	Ops    []msg.Op
}

// ID identifies a value: the client's request (a retried request is the
// same value) or a no-op.
type ID struct {
	Noop        bool
	Client, Seq uint64
}

// ID returns the value's identity.
func (v Value) ID() ID { return ID{Noop: v.Noop, Client: v.Client, Seq: v.Seq} }

func (id ID) String() string {
	if id.Noop {
		return "noop"
	}
	return fmt.Sprintf("c%d#%d", id.Client, id.Seq)
}

func (id ID) hash(h *node.Hasher) {
	h.Bool(id.Noop)
	h.Uint64(id.Client)
	h.Uint64(id.Seq)
}

func (v Value) hash(h *node.Hasher) {
	v.ID().hash(h)
	h.String(string(v.From))
	h.Int(len(v.Ops))
	for _, op := range v.Ops {
		op.Hash(h)
	}
}

// Accepted is one accepted slot reported in phase 1.
type Accepted struct {
	Slot   uint64
	Ballot Ballot
	Val    Value
}

// Chosen is one chosen slot sent to a lagging replica.
type Chosen struct {
	Slot uint64
	Val  Value
}

// P1a is phase 1's prepare: the candidate asks for promises not to accept
// smaller ballots and for the values accepted in slots after From.
type P1a struct {
	Ballot Ballot
	Member int
	From   uint64
}

// P1b promises Ballot and reports the accepted slots after the P1a's From.
type P1b struct {
	Ballot  Ballot
	Member  int
	Entries []Accepted
}

// P2a is phase 2's accept request for one slot. Commit tells followers
// that every slot up to it is chosen, GC that every full replica applied
// every slot up to it.
type P2a struct {
	Ballot Ballot
	Member int
	Slot   uint64
	Val    Value
	Commit uint64
	GC     uint64
}

// P2b acknowledges a P2a: the acceptor accepted Slot at Ballot. (The
// thesis 4.2 mutant leaves Ballot zero and reports only the value.)
type P2b struct {
	Ballot Ballot
	Member int
	Slot   uint64
	Val    ID
}

// Nack rejects a P1a, P2a or Heartbeat whose ballot is smaller than the
// acceptor's promise, and tells the sender that promise.
type Nack struct {
	Ballot   Ballot // the sender's rejected ballot
	Member   int
	Promised Ballot
}

// Heartbeat is the leader's periodic message to every member.
type Heartbeat struct {
	Ballot Ballot
	Member int
	Commit uint64
	GC     uint64
}

// HeartbeatOK answers a heartbeat; Applied is the slot a full replica has
// executed up to (0 from witnesses).
type HeartbeatOK struct {
	Ballot  Ballot
	Member  int
	Applied uint64
}

// Learn gives a lagging full replica chosen slots it is missing.
type Learn struct {
	Ballot  Ballot
	Member  int
	Entries []Chosen
}

// Redirect tells a client that the member it asked is not the leader, and
// which member it believes leads.
type Redirect struct {
	Seq    uint64
	Group  int
	Leader int
}

// Hash implements node.Message.
func (m P1a) Hash(h *node.Hasher) {
	h.Uint64(101)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.From)
}

// Hash implements node.Message.
func (m P1b) Hash(h *node.Hasher) {
	h.Uint64(102)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Int(len(m.Entries))
	for _, e := range m.Entries {
		h.Uint64(e.Slot)
		e.Ballot.Hash(h)
		e.Val.hash(h)
	}
}

// Hash implements node.Message.
func (m P2a) Hash(h *node.Hasher) {
	h.Uint64(103)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.Slot)
	m.Val.hash(h)
	h.Uint64(m.Commit)
	h.Uint64(m.GC)
}

// Hash implements node.Message.
func (m P2b) Hash(h *node.Hasher) {
	h.Uint64(104)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.Slot)
	m.Val.hash(h)
}

// Hash implements node.Message.
func (m Nack) Hash(h *node.Hasher) {
	h.Uint64(105)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	m.Promised.Hash(h)
}

// Hash implements node.Message.
func (m Heartbeat) Hash(h *node.Hasher) {
	h.Uint64(106)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.Commit)
	h.Uint64(m.GC)
}

// Hash implements node.Message.
func (m HeartbeatOK) Hash(h *node.Hasher) {
	h.Uint64(107)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.Applied)
}

// Hash implements node.Message.
func (m Learn) Hash(h *node.Hasher) {
	h.Uint64(108)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Int(len(m.Entries))
	for _, e := range m.Entries {
		h.Uint64(e.Slot)
		e.Val.hash(h)
	}
}

// Hash implements node.Message.
func (m Redirect) Hash(h *node.Hasher) {
	h.Uint64(109)
	h.Uint64(m.Seq)
	h.Int(m.Group)
	h.Int(m.Leader)
}

// electionTimer drives a full replica's failure detection and, while it
// runs for leader, its phase 1 retransmissions. One is always pending.
type electionTimer struct{}

// heartbeatTimer drives a leader's heartbeats for one ballot.
type heartbeatTimer struct{ Ballot Ballot }

// Hash implements node.Timer.
func (electionTimer) Hash(h *node.Hasher) { h.Uint64(121) }

// Hash implements node.Timer.
func (t heartbeatTimer) Hash(h *node.Hasher) { h.Uint64(122); t.Ballot.Hash(h) }
