// Package node is the API between Amalgam's protocol code and the hosts that
// run it. There are two hosts: the production runtime (runtime/, one event
// loop per node, over gRPC or, in the benchmark harness, over simulated
// links) and the model checker (mc/), which explores every order of
// events. docs/hosts.md describes both.
//
// A Node is a deterministic state machine. Its handlers must:
//   - not start goroutines, use channels or locks, read clocks (time.Now),
//     sleep, use the global math/rand source, or do file or network I/O;
//   - not let behaviour depend on Go map iteration order (sort keys first);
//   - cause every effect (unordered send, ordered stream write, timer)
//     through the Context the host passes in.
//
// Given the same state and the same event, a handler must produce the same
// new state and the same effects, in the same order. The checker relies on
// this to clone, hash and replay nodes.
//
// # Streams and incarnations
//
// An ordered stream (Context.Stream) joins one incarnation of its sender to
// one incarnation of its receiver. It ends when either end is replaced or
// crashes for good: when a Starter message starts a new incarnation at
// either address, when either node crashes and will not restart, or when
// the sender's node learns of a newer incarnation of its receiver
// (Peered). A node that restarts from what it persisted (Persistent) is
// the same incarnation: its streams wait for it and resume. Messages of an ended stream
// that were not delivered are lost; what the node streams to that peer
// afterwards opens a new stream, to the incarnation it now knows. Between
// a replacement and the moment the sender's node learns of it, what the
// sender streams may be lost or may reach the new incarnation: a host
// decides, and protocol code must be correct either way. Each host
// implements this rule in one place, from Incarnated, Starter and Peered
// alone; hosts do not read protocol messages.
package node

import "time"

// Addr names a process: "data/2", "parity/4", "witness/1", "reconfig",
// "client/17". The number after the role is the machine (or client) index.
type Addr string

// Message is anything a node sends. Messages are values: after a send the
// sender must not modify it and receivers must not modify it either, because
// hosts may deliver one message to several clones of a node.
type Message interface {
	// Hash writes a canonical encoding of the message into h.
	Hash(h *Hasher)
}

// Timer is a value a node asks to receive back after a delay. The same
// immutability rule as for messages applies.
type Timer interface {
	Hash(h *Hasher)
}

// Context is how a handler acts on the world. It is only valid during the
// handler call it was passed to.
type Context interface {
	// Self is the address the node runs at.
	Self() Addr
	// Send an unordered message: it may be lost, duplicated or reordered.
	Send(to Addr, m Message)
	// Stream appends m to the ordered stream from Self to to: FIFO, lossless
	// and exactly-once while both incarnations live. A stream ends when
	// either end is replaced or crashes (see the package doc).
	Stream(to Addr, m Message)
	// SetTimer asks for Timer(t) to be called after a delay in [min, max].
	SetTimer(t Timer, min, max time.Duration)
}

// Node is one protocol process.
type Node interface {
	// Init runs once when the node starts.
	Init(ctx Context)
	// Handle delivers a message from another node.
	Handle(ctx Context, from Addr, m Message)
	// Timer delivers a timer set earlier with ctx.SetTimer.
	Timer(ctx Context, t Timer)
	// Clone returns a deep copy that shares no mutable memory with the
	// original (immutable buffers may be shared).
	Clone() Node
	// Hash returns a canonical hash of the node's state: equal states hash
	// equal whatever the history that built them. Implementations should
	// cache what did not change so that Hash is cheap.
	Hash() uint64
}

// Incarnated is implemented by nodes that a replacement can succeed at the
// same address (a spare taking a failed server's place). Incarnation
// numbers grow with each replacement.
type Incarnated interface {
	Incarnation() uint64
}

// Starter is implemented by messages that start incarnation inc of the
// server at to. A host delivers such a message even to a crashed address
// when the node there is an older incarnation; it first ends that
// incarnation (its timers and streams), and the handler builds the new
// incarnation's state.
type Starter interface {
	StartsIncarnation(to Addr) (inc uint64, ok bool)
}

// Peered is implemented by nodes that stream to Incarnated peers. It tells
// a host which incarnation of each peer the node addresses, so that the
// host ends the node's streams with a peer's older incarnation when the
// node learns of a newer one (see the package doc).
type Peered interface {
	// PeerVersion changes whenever PeerIncarnations may report something
	// new (a configuration number, say); hosts call PeerIncarnations only
	// then.
	PeerVersion() uint64
	// PeerIncarnations calls fn for every incarnated peer the node knows,
	// with the incarnation it addresses that peer at. Incarnations only
	// grow.
	PeerIncarnations(fn func(peer Addr, inc uint64))
}
