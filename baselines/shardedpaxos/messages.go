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

// Hash writes the ID into h.
func (id ID) Hash(h *node.Hasher) {
	h.Bool(id.Noop)
	h.Uint64(id.Client)
	h.Uint64(id.Seq)
}

// Hash writes the value into h.
func (v Value) Hash(h *node.Hasher) {
	v.ID().Hash(h)
	h.String(string(v.From))
	node.HashAll(h, v.Ops)
}

// Encode implements paxos.Value.
func (v Value) Encode(e *node.Enc) {
	e.Bool(v.Noop)
	e.Uint64(v.Client)
	e.Uint64(v.Seq)
	e.String(string(v.From))
	msg.EncodeOps(e, v.Ops)
}

// decodeValue reads what Encode wrote.
func decodeValue(d *node.Dec) Value {
	return Value{Noop: d.Bool(), Client: d.Uint64(), Seq: d.Uint64(), From: node.Addr(d.String()), Ops: msg.DecodeOps(d)}
}

// WithPiece returns v: values are not erasure-coded.
func (v Value) WithPiece([]byte) Value { return v }

// PieceMissing is false: values are not erasure-coded.
func (Value) PieceMissing() bool { return false }

// Tags are ShardedPaxos's hash type tags for the core's messages and timers.
func (Value) Tags() *paxos.Tags { return &tags }

var tags = paxos.Tags{
	P1a:            node.TagShardedP1a,
	P1b:            node.TagShardedP1b,
	P2a:            node.TagShardedP2a,
	P2b:            node.TagShardedP2b,
	Nack:           node.TagShardedNack,
	Heartbeat:      node.TagShardedHeartbeat,
	HeartbeatOK:    node.TagShardedHeartbeatOK,
	Learn:          node.TagShardedLearn,
	Redirect:       node.TagShardedRedirect,
	ElectionTimer:  node.TagShardedElectionTimer,
	HeartbeatTimer: node.TagShardedHeartbeatTimer,
	Retry:          node.TagShardedRetry,
}

// The messages (see package paxos).
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
