package msg

import (
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// RetryMin and RetryMax bound how long a client or the reconfiguration
// service waits for an answer before it sends again.
const (
	RetryMin = 50 * time.Millisecond
	RetryMax = 100 * time.Millisecond
)

// Request asks a data server to run Ops atomically (thesis 3.3.1 step 1).
// Client and Seq make retries idempotent: a client has one request
// outstanding and numbers them 1, 2, 3, ...
type Request struct {
	Client uint64
	Seq    uint64
	Ops    []Op
}

// Reply answers a Request once it has committed, or rejects it (Err set,
// nothing applied). A rejected request is final for that Seq.
type Reply struct {
	Seq     uint64
	Outcome Outcome
	Err     string
}

// Prepare carries one operation's change to one stripe, from the shard's
// data server to the stripe's parity servers and witnesses, over the
// ordered stream (3.3.1 step 2). Stripes lists every stripe the operation
// changes, so that recovery can tell whether all its parts survived (3.3.4).
// Client and Seq identify the request for the client table.
type Prepare struct {
	Shard   int
	Primary uint64 // the data server's primary_num
	OpNum   uint64
	Stripe  int
	Pos     int    // the shard's data position in Stripe
	Delta   []byte // old XOR new; nil when the op only read the stripe
	Stripes []int
	Client  uint64
	Seq     uint64
	// Reply is the operation's result when it changed a block, so that a
	// replacement data server can rebuild its client table (3.3).
	Reply *Reply
}

// PrepareOK acknowledges a Prepare (3.3.1 step 3). Inc is the incarnation
// of the acknowledging parity server or witness.
type PrepareOK struct {
	Shard   int
	Primary uint64
	OpNum   uint64
	Stripe  int
	Inc     uint64
}

// Commit tells parity servers that OpNum committed: fold its delta in.
type Commit struct {
	Shard   int
	Primary uint64
	OpNum   uint64
	Stripe  int
}

// PrepareDrop tells parity servers and witnesses that every parity server
// of the stripe holds OpNum: discard the Prepare (3.3.1 step 5).
type PrepareDrop struct {
	Shard   int
	Primary uint64
	OpNum   uint64
	Stripe  int
}

// Hash implements node.Message.
func (m Request) Hash(h *node.Hasher) {
	h.Tag(node.TagRequest)
	h.Uint64(m.Client)
	h.Uint64(m.Seq)
	node.HashAll(h, m.Ops)
}

// Hash implements node.Message.
func (m Reply) Hash(h *node.Hasher) {
	h.Tag(node.TagReply)
	m.fields(h)
}

// Hash implements node.Message.
func (m Prepare) Hash(h *node.Hasher) {
	h.Tag(node.TagPrepare)
	m.fields(h)
}

// hashRef opens the hash of a commit-protocol message with its tag and
// the stripe part of the operation it is about.
func hashRef(h *node.Hasher, tag node.Tag, shard int, primary, opNum uint64, stripe int) {
	h.Tag(tag)
	h.Int(shard)
	h.Uint64(primary)
	h.Uint64(opNum)
	h.Int(stripe)
}

// Hash implements node.Message.
func (m PrepareOK) Hash(h *node.Hasher) {
	hashRef(h, node.TagPrepareOK, m.Shard, m.Primary, m.OpNum, m.Stripe)
	h.Uint64(m.Inc)
}

// Hash implements node.Message.
func (m Commit) Hash(h *node.Hasher) {
	hashRef(h, node.TagCommit, m.Shard, m.Primary, m.OpNum, m.Stripe)
}

// Hash implements node.Message.
func (m PrepareDrop) Hash(h *node.Hasher) {
	hashRef(h, node.TagPrepareDrop, m.Shard, m.Primary, m.OpNum, m.Stripe)
}

// Unhurried implements node.Unhurried: a COMMIT is sent after the
// operation's reply, and only brings the parity block up to date sooner.
func (Commit) Unhurried() {}

// Unhurried implements node.Unhurried: a PREPARE-DROP only frees a held
// PREPARE sooner.
func (PrepareDrop) Unhurried() {}

// EarlySends implements node.EarlySends: a data server's reply to the
// operation a PREPARE-OK commits may leave before the commit is durable.
// The operation, its result and its PREPAREs are durable since the
// request's batch; a crash that loses the commit loses the
// acknowledgement of this PREPARE-OK too, so the backup sends it again and
// the restarted server commits the same operation with the same reply
// (docs/hosts.md, lazy batches; checked by the restart scenarios' early
// variants, check/scenario_early.go).
func (PrepareOK) EarlySends() {}

// PrepKey identifies one stripe's part of one operation.
type PrepKey struct {
	Shard  int
	OpNum  uint64
	Stripe int
}

// Key returns the Prepare's identity.
func (m Prepare) Key() PrepKey { return PrepKey{m.Shard, m.OpNum, m.Stripe} }

// Less orders keys by shard, op number, stripe.
func (k PrepKey) Less(o PrepKey) bool {
	if k.Shard != o.Shard {
		return k.Shard < o.Shard
	}
	if k.OpNum != o.OpNum {
		return k.OpNum < o.OpNum
	}
	return k.Stripe < o.Stripe
}
