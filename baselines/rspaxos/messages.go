package rspaxos

import (
	"fmt"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/node"
)

// Ballot is a proposal number (paxos.Ballot).
type Ballot = paxos.Ballot

// Kind is what a log slot does.
type Kind uint8

// The kinds of value.
const (
	Noop Kind = iota // fills a hole after a leader change
	Get              // read a whole block
	Put              // write a whole block
)

func (k Kind) String() string {
	switch k {
	case Get:
		return "get"
	case Put:
		return "put"
	}
	return "noop"
}

// Value is what a log slot holds. A PUT's data travels as pieces: each
// member is sent and stores only its own piece (Piece), and only the
// proposing leader holds all of them. Values are immutable once built.
type Value struct {
	Kind   Kind
	Client uint64
	Seq    uint64
	From   node.Addr // the client's address, for the reply
	Block  uint64
	Piece  []byte // PUT: the holder's piece; nil when it is not known
}

// ID identifies a value: the client's request, or a no-op. All pieces of
// one PUT belong to one value.
type ID struct {
	Kind        Kind
	Client, Seq uint64
}

// ID returns the value's identity.
func (v Value) ID() ID { return ID{Kind: v.Kind, Client: v.Client, Seq: v.Seq} }

// withPiece returns v carrying piece p.
func (v Value) withPiece(p []byte) Value {
	v.Piece = p
	return v
}

func (id ID) String() string {
	if id.Kind == Noop {
		return "noop"
	}
	return fmt.Sprintf("%s:c%d#%d", id.Kind, id.Client, id.Seq)
}

func (id ID) hash(h *node.Hasher) {
	h.Uint64(uint64(id.Kind))
	h.Uint64(id.Client)
	h.Uint64(id.Seq)
}

func (v Value) hash(h *node.Hasher) {
	v.ID().hash(h)
	h.String(string(v.From))
	h.Uint64(v.Block)
	h.Bool(v.Piece != nil)
	h.Bytes(v.Piece)
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

// P2b acknowledges a P2a: the acceptor accepted Slot at Ballot.
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

// PieceReply is a replica's piece of Block as of executing the GET in
// Slot, sent to the leader, which decodes the block from f+1 pieces.
// Version is the slot of the PUT that wrote the piece (0: never written,
// all zeros); Missing is set when the replica learned that PUT without its
// piece.
type PieceReply struct {
	Member  int
	Slot    uint64
	Block   uint64
	Version uint64
	Piece   []byte
	Missing bool
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
	h.Uint64(201)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.From)
}

// Hash implements node.Message.
func (m P1b) Hash(h *node.Hasher) {
	h.Uint64(202)
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
	h.Uint64(203)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.Slot)
	m.Val.hash(h)
	h.Uint64(m.Commit)
	h.Uint64(m.GC)
}

// Hash implements node.Message.
func (m P2b) Hash(h *node.Hasher) {
	h.Uint64(204)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.Slot)
	m.Val.hash(h)
}

// Hash implements node.Message.
func (m Nack) Hash(h *node.Hasher) {
	h.Uint64(205)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	m.Promised.Hash(h)
}

// Hash implements node.Message.
func (m Heartbeat) Hash(h *node.Hasher) {
	h.Uint64(206)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.Commit)
	h.Uint64(m.GC)
}

// Hash implements node.Message.
func (m HeartbeatOK) Hash(h *node.Hasher) {
	h.Uint64(207)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Uint64(m.Applied)
}

// Hash implements node.Message.
func (m Learn) Hash(h *node.Hasher) {
	h.Uint64(208)
	m.Ballot.Hash(h)
	h.Int(m.Member)
	h.Int(len(m.Entries))
	for _, e := range m.Entries {
		h.Uint64(e.Slot)
		e.Val.hash(h)
	}
}

// Hash implements node.Message.
func (m PieceReply) Hash(h *node.Hasher) {
	h.Uint64(210)
	h.Int(m.Member)
	h.Uint64(m.Slot)
	h.Uint64(m.Block)
	h.Uint64(m.Version)
	h.Bytes(m.Piece)
	h.Bool(m.Missing)
}

// Hash implements node.Message.
func (m Redirect) Hash(h *node.Hasher) {
	h.Uint64(209)
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
func (electionTimer) Hash(h *node.Hasher) { h.Uint64(221) }

// Hash implements node.Timer.
func (t heartbeatTimer) Hash(h *node.Hasher) { h.Uint64(222); t.Ballot.Hash(h) }
