package paxos

import "github.com/amalgam-store/amalgam/node"

// The messages of the core. Each baseline instantiates them with its own
// value and ID types (shardedpaxos.P2a is P2a[shardedpaxos.Value,
// shardedpaxos.ID]), so the two baselines' messages are distinct types
// with distinct hash tags (Value.Tags).

// Accepted is one accepted slot reported in phase 1.
type Accepted[V any] struct {
	Slot   uint64
	Ballot Ballot
	Val    V
}

// Chosen is one chosen slot sent to a lagging replica.
type Chosen[V any] struct {
	Slot uint64
	Val  V
}

// P1a is phase 1's prepare: the candidate asks for promises not to accept
// smaller ballots and for the values accepted in slots after From.
type P1a[V Value[V, I], I ID] struct {
	Ballot Ballot
	Member int
	From   uint64
}

// P1b promises Ballot and reports the accepted slots after the P1a's From.
type P1b[V Value[V, I], I ID] struct {
	Ballot  Ballot
	Member  int
	Entries []Accepted[V]
}

// P2a is phase 2's accept request for one slot. Commit tells followers
// that every slot up to it is chosen, GC that every full replica applied
// every slot up to it.
type P2a[V Value[V, I], I ID] struct {
	Ballot Ballot
	Member int
	Slot   uint64
	Val    V
	Commit uint64
	GC     uint64
}

// P2b acknowledges a P2a: the acceptor accepted Slot at Ballot. (The
// thesis 4.2 mutant leaves Ballot zero and reports only the value.)
type P2b[V Value[V, I], I ID] struct {
	Ballot Ballot
	Member int
	Slot   uint64
	Val    I
}

// Nack rejects a P1a, P2a or Heartbeat whose ballot is smaller than the
// acceptor's promise, and tells the sender that promise.
type Nack[V Value[V, I], I ID] struct {
	Ballot   Ballot // the sender's rejected ballot
	Member   int
	Promised Ballot
}

// Heartbeat is the leader's periodic message to every member.
type Heartbeat[V Value[V, I], I ID] struct {
	Ballot Ballot
	Member int
	Commit uint64
	GC     uint64
}

// HeartbeatOK answers a heartbeat; Applied is the slot a full replica has
// executed up to (0 from witnesses).
type HeartbeatOK[V Value[V, I], I ID] struct {
	Ballot  Ballot
	Member  int
	Applied uint64
}

// Learn gives a lagging full replica chosen slots it is missing.
type Learn[V Value[V, I], I ID] struct {
	Ballot  Ballot
	Member  int
	Entries []Chosen[V]
}

// Redirect tells a client that the member it asked is not the leader, and
// which member it believes leads.
type Redirect[V Value[V, I], I ID] struct {
	Seq    uint64
	Group  int
	Leader int
}

// tags returns the protocol's hash type tags.
func tags[V Value[V, I], I ID]() *Tags {
	var v V
	return v.Tags()
}

// head opens the hash of a member's message: its tag, ballot and member.
func head(h *node.Hasher, tag node.Tag, b Ballot, member int) {
	h.Tag(tag)
	b.Hash(h)
	h.Int(member)
}

// Hash implements node.Message.
func (m P1a[V, I]) Hash(h *node.Hasher) {
	head(h, tags[V, I]().P1a, m.Ballot, m.Member)
	h.Uint64(m.From)
}

// Hash implements node.Message.
func (m P1b[V, I]) Hash(h *node.Hasher) {
	head(h, tags[V, I]().P1b, m.Ballot, m.Member)
	h.Int(len(m.Entries))
	for _, e := range m.Entries {
		h.Uint64(e.Slot)
		e.Ballot.Hash(h)
		e.Val.Hash(h)
	}
}

// Hash implements node.Message.
func (m P2a[V, I]) Hash(h *node.Hasher) {
	head(h, tags[V, I]().P2a, m.Ballot, m.Member)
	h.Uint64(m.Slot)
	m.Val.Hash(h)
	h.Uint64(m.Commit)
	h.Uint64(m.GC)
}

// Hash implements node.Message.
func (m P2b[V, I]) Hash(h *node.Hasher) {
	head(h, tags[V, I]().P2b, m.Ballot, m.Member)
	h.Uint64(m.Slot)
	m.Val.Hash(h)
}

// Hash implements node.Message.
func (m Nack[V, I]) Hash(h *node.Hasher) {
	head(h, tags[V, I]().Nack, m.Ballot, m.Member)
	m.Promised.Hash(h)
}

// Hash implements node.Message.
func (m Heartbeat[V, I]) Hash(h *node.Hasher) {
	head(h, tags[V, I]().Heartbeat, m.Ballot, m.Member)
	h.Uint64(m.Commit)
	h.Uint64(m.GC)
}

// Hash implements node.Message.
func (m HeartbeatOK[V, I]) Hash(h *node.Hasher) {
	head(h, tags[V, I]().HeartbeatOK, m.Ballot, m.Member)
	h.Uint64(m.Applied)
}

// Hash implements node.Message.
func (m Learn[V, I]) Hash(h *node.Hasher) {
	head(h, tags[V, I]().Learn, m.Ballot, m.Member)
	h.Int(len(m.Entries))
	for _, e := range m.Entries {
		h.Uint64(e.Slot)
		e.Val.Hash(h)
	}
}

// Hash implements node.Message.
func (m Redirect[V, I]) Hash(h *node.Hasher) {
	h.Tag(tags[V, I]().Redirect)
	h.Uint64(m.Seq)
	h.Int(m.Group)
	h.Int(m.Leader)
}

// ElectionTimer drives a full replica's failure detection and, while it
// runs for leader, its phase 1 retransmissions. One is always pending.
// (The timers are exported for the baselines' tests.)
type ElectionTimer[V Value[V, I], I ID] struct{}

// HeartbeatTimer drives a leader's heartbeats for one ballot.
type HeartbeatTimer[V Value[V, I], I ID] struct{ Ballot Ballot }

// Hash implements node.Timer.
func (ElectionTimer[V, I]) Hash(h *node.Hasher) { h.Tag(tags[V, I]().ElectionTimer) }

// Hash implements node.Timer.
func (t HeartbeatTimer[V, I]) Hash(h *node.Hasher) {
	h.Tag(tags[V, I]().HeartbeatTimer)
	t.Ballot.Hash(h)
}

// Retry is a client's retry timer for the request numbered Seq.
type Retry[V Value[V, I], I ID] struct{ Seq uint64 }

// Hash implements node.Timer.
func (t Retry[V, I]) Hash(h *node.Hasher) {
	h.Tag(tags[V, I]().Retry)
	h.Uint64(t.Seq)
}
