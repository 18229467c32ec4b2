package paxos

import (
	"fmt"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// ID identifies a value: the client request it carries, or a no-op.
type ID interface {
	comparable
	Hash(h *node.Hasher)
}

// Value is what a log slot holds. V is the value type itself. Values are
// immutable once built.
type Value[V any, I ID] interface {
	ID() I
	Hash(h *node.Hasher)
	// WithPiece returns the value carrying piece p of an erasure-coded
	// block (nil: none). A value that is not erasure-coded returns itself.
	WithPiece(p []byte) V
	// PieceMissing reports whether the value should carry this member's
	// piece but does not; a replica that learns such a value keeps the
	// one it accepted with the same ID, which has its piece. Always false
	// for a value that is not erasure-coded.
	PieceMissing() bool
	// Tags are the protocol's hash type tags. It is called on the zero
	// value.
	Tags() *Tags
	// Encode appends the value's record (the core's slot records,
	// persist.go) to e; App.DecodeValue reads it back.
	Encode(e *node.Enc)
}

// Tags are one protocol's hash type tags for the core's messages and timers.
type Tags struct {
	P1a, P1b, P2a, P2b, Nack, Heartbeat, HeartbeatOK, Learn, Redirect node.Tag
	ElectionTimer, HeartbeatTimer, Retry                              node.Tag
}

// Deployment is what a baseline's configuration holds; each baseline
// defines its Config from it (type Config paxos.Deployment) with its own
// group shape.
type Deployment struct {
	// Layout numbers blocks and shards exactly as Amalgam does: group g
	// serves Layout.ShardBlocks(g), Layout.N is the number of groups and
	// Layout.F is f, the number of failures each group tolerates.
	// Layout.G and Layout.W only affect block numbering.
	Layout erasure.Layout
	Timing Timing // zero fields take DefaultTiming's
}

// Params is what the core needs of a protocol's configuration.
type Params struct {
	Members int // acceptors per group
	Full    int // members 0..Full-1 are full replicas, the others acceptor-only witnesses
	Quorum  int // the phase 1 and phase 2 quorum size
	Timing  Timing
	Addr    func(g, i int) node.Addr // member i of group g; pure
}

// App is what a baseline adds to the core: its requests, its state
// machine and its phase 1 recovery. P is the phase 1 state of one slot,
// merged from the members' reports.
type App[V Value[V, I], I ID, P any] interface {
	// Admit turns a client request at the leader into a value, or answers
	// the client itself and reports false.
	Admit(ctx node.Context, from node.Addr, req msg.Request) (V, bool)
	// Pieces returns the pieces of a new value (nil: not erasure-coded),
	// or false to drop the request (it is already under way).
	Pieces(v V, req msg.Request) ([][]byte, bool)
	// Execute runs the value chosen in slot on the state machine. True
	// makes a leader tell the followers the new commit point at once.
	Execute(ctx node.Context, slot uint64, v V) bool
	// StepDown forgets what the app keeps while leading.
	StepDown()
	// MergeP1 adds member's report of an accepted value to p.
	MergeP1(p *P, member int, a Accepted[V])
	// Recover picks the value (and its pieces) a new leader proposes
	// again in a slot, from its phase 1 state p (nil: no reports) and the
	// value it learned was chosen there (nil: none).
	Recover(p *P, learned *V) (V, [][]byte)
	// HashP1 writes p into h.
	HashP1(h *node.Hasher, p *P)

	// The app's part of the replica's durable state (persist.go).

	// DecodeValue reads what Value.Encode wrote.
	DecodeValue(d *node.Dec) V
	// TrackApp, PersistApp and RestoreApp are node.Persistent's methods
	// for the app's own state, under keys of its own (not the core's p,
	// a/, c/ and t/).
	TrackApp()
	PersistApp(w node.Writer)
	RestoreApp(r node.Reader) error
}

// Check reports the first problem with a deployment of p over layout l:
// an invalid layout, or groups of more members than Votes holds; name
// prefixes the latter error.
func (p Params) Check(name string, l erasure.Layout) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if p.Members > MaxMembers {
		return fmt.Errorf("%s: at most %d members per group (votes are a 64-bit mask), got %d", name, MaxMembers, p.Members)
	}
	return nil
}

// Nodes builds every member of the listed groups (all n groups when
// groups is nil) with replica, keyed by address.
func Nodes(p Params, n int, groups []int, replica func(g, i int) node.Node) map[node.Addr]node.Node {
	if groups == nil {
		for g := 0; g < n; g++ {
			groups = append(groups, g)
		}
	}
	out := map[node.Addr]node.Node{}
	for _, g := range groups {
		for i := 0; i < p.Members; i++ {
			out[p.Addr(g, i)] = replica(g, i)
		}
	}
	return out
}
