package msg

import (
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/node"
)

// Messages of server replacement (thesis 3.3.2.1, 3.3.2.2). The
// reconfiguration service sends them unordered and re-sends until
// answered; servers answer every copy.

// ReconfigAddr is the reconfiguration service's address.
const ReconfigAddr node.Addr = "reconfig"

// Replace asks the reconfiguration service to replace incarnation Inc of
// the server playing Role on Machine (an operator's command, or a failure
// suspicion). Naming the incarnation makes a re-sent request harmless.
type Replace struct {
	Role    erasure.Role
	Machine int
	Inc     uint64
}

// StopShard asks a parity server or witness to stop accepting the current
// data server of Shard and to report what it holds of the shard, for the
// configuration numbered Num that will replace it.
type StopShard struct {
	Num     uint64
	Shard   int
	Primary uint64 // the data server being replaced
}

// ClientRecord is the latest committed result of a client's request on a
// shard: the client table entry a replacement data server starts from.
type ClientRecord struct {
	Client, Seq uint64
	Reply       Reply
}

// StopShardOK answers StopShard: the shard's PREPAREs the server holds,
// the highest op number it applied (parity servers; 0 for witnesses), and
// its client records for the shard.
type StopShardOK struct {
	Num      uint64
	Shard    int
	OpNum    uint64
	Prepares []Prepare
	Clients  []ClientRecord
}

// StopBackup asks a data server to stop counting acknowledgements from the
// parity server or witness of Machine with incarnation Inc, which the
// configuration numbered Num replaces.
type StopBackup struct {
	Num     uint64
	Role    erasure.Role
	Machine int
	Inc     uint64
}

// StopBackupOK answers StopBackup.
type StopBackupOK struct {
	Num     uint64
	Role    erasure.Role
	Machine int
}

// Install is what a data server replacement hands the servers of its
// shard: the operations of the old data server that survive (the chain,
// thesis 3.3.2.1 step 2), and the shard's client records.
type Install struct {
	Shard int
	// Upto is the last surviving op number: tau or the end of the chain.
	// Every operation up to it committed; parity servers apply those they
	// hold or that Chain brings, and discard the rest.
	Upto    uint64
	Chain   []Prepare // sorted by op number, then stripe
	Clients []ClientRecord
}

// NewConfig tells a server about configuration Config.Num. Servers apply
// configurations in order, one number at a time. Install is set when the
// configuration replaces a data server. A NewConfig that gives the
// receiver's role a new incarnation starts that incarnation at the
// receiver's address (a spare taking the failed server's place).
type NewConfig struct {
	Config  Config
	Install *Install
}

// ConfigOK acknowledges a NewConfig.
type ConfigOK struct{ Num uint64 }

// Resending tells the reconfiguration service which replaced parity
// servers and witnesses (Backups) the data server of Shard is still
// re-sending its pending operations to, in configuration Num. A replaced
// backup that has not caught up with a shard does not count in the quorum
// that replaces the shard's data server: it may lack operations that
// committed with its predecessor's acknowledgement.
type Resending struct {
	Num     uint64
	Shard   int
	Backups []node.Addr
}

// Rebuilt tells the reconfiguration service that incarnation Inc of the
// data or parity server playing Role on Machine, which a replacement
// started degraded, has rebuilt every block it holds. Until then the
// service counts the server as degraded in every stripe it holds a block
// of, and postpones a replacement that would leave such a stripe with more
// than f degraded blocks (the Server Liveness Criterion, thesis 3.4.2).
// The server re-sends it on a timer until the service answers RebuiltOK.
type Rebuilt struct {
	Role    erasure.Role
	Machine int
	Inc     uint64
}

// RebuiltOK acknowledges a Rebuilt (every copy, stale ones included).
type RebuiltOK struct {
	Role    erasure.Role
	Machine int
	Inc     uint64
}

// Acks reports whether m acknowledges r.
func (m RebuiltOK) Acks(r Rebuilt) bool { return m == RebuiltOK(r) }

// hashServer hashes a message about one server incarnation (Replace,
// Rebuilt, RebuiltOK): its tag, then the server's role, machine and
// incarnation.
func hashServer(h *node.Hasher, tag node.Tag, role erasure.Role, machine int, inc uint64) {
	h.Tag(tag)
	h.Int(int(role))
	h.Int(machine)
	h.Uint64(inc)
}

// Hash implements node.Message.
func (m Replace) Hash(h *node.Hasher) { hashServer(h, node.TagReplace, m.Role, m.Machine, m.Inc) }

// Hash implements node.Message.
func (m StopShard) Hash(h *node.Hasher) {
	h.Tag(node.TagStopShard)
	h.Uint64(m.Num)
	h.Int(m.Shard)
	h.Uint64(m.Primary)
}

// Hash implements node.Message.
func (m StopShardOK) Hash(h *node.Hasher) {
	h.Tag(node.TagStopShardOK)
	h.Uint64(m.Num)
	h.Int(m.Shard)
	h.Uint64(m.OpNum)
	node.HashAll(h, m.Prepares)
	hashClients(h, m.Clients)
}

// Hash implements node.Message.
func (m StopBackup) Hash(h *node.Hasher) {
	h.Tag(node.TagStopBackup)
	h.Uint64(m.Num)
	h.Int(int(m.Role))
	h.Int(m.Machine)
	h.Uint64(m.Inc)
}

// Hash implements node.Message.
func (m StopBackupOK) Hash(h *node.Hasher) {
	h.Tag(node.TagStopBackupOK)
	h.Uint64(m.Num)
	h.Int(int(m.Role))
	h.Int(m.Machine)
}

// Hash implements node.Message.
func (m NewConfig) Hash(h *node.Hasher) {
	h.Tag(node.TagNewConfig)
	m.Config.Hash(h)
	h.Bool(m.Install != nil)
	if m.Install != nil {
		h.Int(m.Install.Shard)
		h.Uint64(m.Install.Upto)
		node.HashAll(h, m.Install.Chain)
		hashClients(h, m.Install.Clients)
	}
}

// Hash implements node.Message.
func (m ConfigOK) Hash(h *node.Hasher) { h.Tag(node.TagConfigOK); h.Uint64(m.Num) }

// Hash implements node.Message.
func (m Resending) Hash(h *node.Hasher) {
	h.Tag(node.TagResending)
	h.Uint64(m.Num)
	h.Int(m.Shard)
	node.HashStrings(h, m.Backups)
}

// Hash implements node.Message.
func (m Rebuilt) Hash(h *node.Hasher) { hashServer(h, node.TagRebuilt, m.Role, m.Machine, m.Inc) }

// Hash implements node.Message.
func (m RebuiltOK) Hash(h *node.Hasher) { hashServer(h, node.TagRebuiltOK, m.Role, m.Machine, m.Inc) }

// StartsIncarnation implements node.Starter: a configuration starts the
// incarnation it gives the server it replaced.
func (m NewConfig) StartsIncarnation(to node.Addr) (uint64, bool) {
	role, i, err := ParseAddr(to)
	if err != nil || i >= m.Config.Layout.N || to != m.Config.Changed {
		return 0, false
	}
	switch role {
	case "data":
		return m.Config.Data[i], true
	case "parity":
		return m.Config.Parity[i], true
	case "witness":
		return m.Config.Witness[i], true
	}
	return 0, false
}

func hashClients(h *node.Hasher, cs []ClientRecord) {
	h.Int(len(cs))
	for _, c := range cs {
		h.Uint64(c.Client)
		h.Uint64(c.Seq)
		c.Reply.Hash(h)
	}
}

// Messages of the stripe snapshot protocol (thesis 3.3.2.3). A recovering
// server sends StripeSnapshot to the stripe's data servers; each forwards
// a SnapshotMarker down its ordered streams to the stripe's parity servers
// and answers with SnapshotData; each parity server answers with
// SnapshotParity once it has every data server's marker. Num is the
// configuration the snapshot runs in: servers in another one ignore it.
//
// One snapshot (a run) covers Count stripes: Stripe, Stripe+n, ...,
// Stripe+(Count-1)*n for n machines, which have the same servers in the
// same roles (Count 0 counts as 1). Each server takes one cut across all
// of them; answers carry the first stripe's block in Block and the
// others' in Rest, in stripe order.

// StripeSnapshot asks a data server for its blocks of the run.
type StripeSnapshot struct {
	Num       uint64
	Stripe    int
	Nonce     uint64
	Requester node.Addr
	Count     int
}

// RunCount is a run's Count field for k stripes: 0 for one, so that a
// one-stripe snapshot reads as it did before runs.
func RunCount(k int) int {
	if k == 1 {
		return 0
	}
	return k
}

// RunStripes is the run's stripes in a layout of n machines.
func RunStripes(first, count, n int) []int {
	out := make([]int, max(count, 1))
	for i := range out {
		out[i] = first + i*n
	}
	return out
}

// SnapshotMarker follows a data server's PREPAREs for the stripe on its
// stream to each parity server of the stripe.
type SnapshotMarker struct {
	Num       uint64
	Stripe    int
	Nonce     uint64
	Requester node.Addr
	Shard     int
	Count     int
}

// SnapshotData is a data server's answer: its block (nil if degraded), its
// op_num (the block reflects exactly its operations numbered below) and its
// primary_num.
type SnapshotData struct {
	Num     uint64
	Stripe  int
	Nonce   uint64
	Shard   int
	Block   []byte
	Rest    [][]byte // the run's later stripes' blocks
	OpNum   uint64
	Primary uint64
}

// SnapshotParity is a parity server's answer: its parity block as of every
// data server's marker (nil if it has not rebuilt the block).
type SnapshotParity struct {
	Num    uint64
	Stripe int
	Nonce  uint64
	Index  int // parity index in the stripe
	Block  []byte
	Rest   [][]byte // the run's later stripes' blocks
}

// hashSnapshot opens the hash of a snapshot exchange's message with its
// tag and the exchange's identity: configuration, stripe and nonce.
func hashSnapshot(h *node.Hasher, tag node.Tag, num uint64, stripe int, nonce uint64) {
	h.Tag(tag)
	h.Uint64(num)
	h.Int(stripe)
	h.Uint64(nonce)
}

// Hash implements node.Message.
func (m StripeSnapshot) Hash(h *node.Hasher) {
	hashSnapshot(h, node.TagStripeSnapshot, m.Num, m.Stripe, m.Nonce)
	h.String(string(m.Requester))
	h.Int(m.Count)
}

// Hash implements node.Message.
func (m SnapshotMarker) Hash(h *node.Hasher) {
	hashSnapshot(h, node.TagSnapshotMarker, m.Num, m.Stripe, m.Nonce)
	h.String(string(m.Requester))
	h.Int(m.Shard)
	h.Int(m.Count)
}

// Hash implements node.Message.
func (m SnapshotData) Hash(h *node.Hasher) {
	hashSnapshot(h, node.TagSnapshotData, m.Num, m.Stripe, m.Nonce)
	h.Int(m.Shard)
	hashBlocks(h, m.Block, m.Rest)
	h.Uint64(m.OpNum)
	h.Uint64(m.Primary)
}

// Hash implements node.Message.
func (m SnapshotParity) Hash(h *node.Hasher) {
	hashSnapshot(h, node.TagSnapshotParity, m.Num, m.Stripe, m.Nonce)
	h.Int(m.Index)
	hashBlocks(h, m.Block, m.Rest)
}

// hashBlocks hashes a snapshot answer's blocks.
func hashBlocks(h *node.Hasher, first []byte, rest [][]byte) {
	h.OptBytes(first)
	h.OptBytesList(rest)
}

// Blocks is the answer's blocks, one per stripe of the run.
func (m SnapshotData) Blocks() [][]byte { return append([][]byte{m.Block}, m.Rest...) }

// Blocks is the answer's blocks, one per stripe of the run.
func (m SnapshotParity) Blocks() [][]byte { return append([][]byte{m.Block}, m.Rest...) }
