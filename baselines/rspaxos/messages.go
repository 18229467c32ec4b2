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

// Encode implements paxos.Value.
func (v Value) Encode(e *node.Enc) {
	e.Uint64(uint64(v.Kind))
	e.Uint64(v.Client)
	e.Uint64(v.Seq)
	e.String(string(v.From))
	e.Uint64(v.Block)
	e.Bytes(v.Piece)
}

// decodeValue reads what Encode wrote.
func decodeValue(d *node.Dec) Value {
	return Value{Kind: Kind(d.Uint64()), Client: d.Uint64(), Seq: d.Uint64(), From: node.Addr(d.String()), Block: d.Uint64(),
		Piece: d.Bytes()}
}

// WithPiece returns v carrying piece p.
func (v Value) WithPiece(p []byte) Value {
	v.Piece = p
	return v
}

// PieceMissing reports whether v carries no piece.
func (v Value) PieceMissing() bool { return v.Piece == nil }

// Tags are RSPaxos's hash type tags for the core's messages and timers.
func (Value) Tags() *paxos.Tags { return &tags }

var tags = paxos.Tags{
	P1a:            node.TagRSP1a,
	P1b:            node.TagRSP1b,
	P2a:            node.TagRSP2a,
	P2b:            node.TagRSP2b,
	Nack:           node.TagRSNack,
	Heartbeat:      node.TagRSHeartbeat,
	HeartbeatOK:    node.TagRSHeartbeatOK,
	Learn:          node.TagRSLearn,
	Redirect:       node.TagRSRedirect,
	ElectionTimer:  node.TagRSElectionTimer,
	HeartbeatTimer: node.TagRSHeartbeatTimer,
	Retry:          node.TagRSRetry,
}

// The messages of the paxos core.
type (
	Accepted    = paxos.Accepted[Value]
	Chosen      = paxos.Chosen[Value]
	P1a         = paxos.P1a[Value, ID]
	P1b         = paxos.P1b[Value, ID]
	P2a         = paxos.P2a[Value, ID]
	P2b         = paxos.P2b[Value, ID]
	Nack        = paxos.Nack[Value, ID]
	Heartbeat   = paxos.Heartbeat[Value, ID]
	HeartbeatOK = paxos.HeartbeatOK[Value, ID]
	Learn       = paxos.Learn[Value, ID]
	Redirect    = paxos.Redirect[Value, ID]
	SlotView    = paxos.SlotView[ID]
	Retry       = paxos.Retry[Value, ID] // the client's timer
)

func (id ID) String() string {
	if id.Kind == Noop {
		return "noop"
	}
	return fmt.Sprintf("%s:c%d#%d", id.Kind, id.Client, id.Seq)
}

// Hash writes the ID into h.
func (id ID) Hash(h *node.Hasher) {
	h.Uint64(uint64(id.Kind))
	h.Uint64(id.Client)
	h.Uint64(id.Seq)
}

// Hash writes the value into h.
func (v Value) Hash(h *node.Hasher) {
	v.ID().Hash(h)
	h.String(string(v.From))
	h.Uint64(v.Block)
	h.OptBytes(v.Piece)
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

// Hash implements node.Message. Block, Version, Piece and Missing are the
// replica's stored piece of the block, hashed as its store hashes it.
func (m PieceReply) Hash(h *node.Hasher) {
	h.Tag(node.TagRSPieceReply)
	h.Int(m.Member)
	h.Uint64(m.Slot)
	stored{version: m.Version, piece: m.Piece, missing: m.Missing}.hashTo(h, m.Block)
}
