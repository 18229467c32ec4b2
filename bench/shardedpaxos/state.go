package shardedpaxos

import (
	"slices"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// clientTable gives at-most-once execution: the last executed request of
// each client and its reply. Entries are immutable values; acc is the XOR
// of the entries' hashes, kept up to date by put, so hashing is O(1).
type clientTable struct {
	m   map[uint64]clientEntry
	acc uint64
}

type clientEntry struct {
	seq   uint64
	reply msg.Reply
}

func newClientTable() clientTable { return clientTable{m: map[uint64]clientEntry{}} }

func (t *clientTable) get(c uint64) (clientEntry, bool) {
	e, ok := t.m[c]
	return e, ok
}

func (t *clientTable) put(c uint64, e clientEntry) {
	if old, ok := t.m[c]; ok {
		t.acc ^= old.hash(c)
	}
	t.m[c] = e
	t.acc ^= e.hash(c)
}

func (t clientTable) clone() clientTable {
	if t.m == nil {
		return t
	}
	c := clientTable{m: make(map[uint64]clientEntry, len(t.m)), acc: t.acc}
	for k, v := range t.m {
		c.m[k] = v
	}
	return c
}

func (e clientEntry) hash(c uint64) uint64 {
	h := node.NewHasher()
	h.Uint64(c)
	h.Uint64(e.seq)
	e.reply.Hash(h)
	return h.Sum()
}

// blockMap holds a full replica's blocks. Contents are immutable (a
// change puts a new slice); acc is the XOR of the non-zero blocks' entry
// hashes, kept up to date by put, so that hashing is O(1) and a block of
// zeros hashes like a missing one.
type blockMap struct {
	m    map[uint64][]byte
	zero []byte // read-only
	acc  uint64
}

func newBlockMap(size int) blockMap {
	return blockMap{m: map[uint64][]byte{}, zero: make([]byte, size)}
}

func (b *blockMap) get(id uint64) []byte {
	if v, ok := b.m[id]; ok {
		return v
	}
	return b.zero
}

func (b *blockMap) put(id uint64, v []byte) {
	if old, ok := b.m[id]; ok {
		b.acc ^= blockHash(id, old)
	}
	b.m[id] = v
	b.acc ^= blockHash(id, v)
}

func blockHash(id uint64, v []byte) uint64 {
	if !slices.ContainsFunc(v, func(x byte) bool { return x != 0 }) {
		return 0
	}
	h := node.NewHasher()
	h.Uint64(id)
	h.Bytes(v)
	return h.Sum()
}

func (b blockMap) clone() blockMap {
	if b.m == nil {
		return b
	}
	c := b
	c.m = make(map[uint64][]byte, len(b.m))
	for k, v := range b.m {
		c.m[k] = v
	}
	return c
}

// own makes the replica's blocks and client table its own before it
// changes them (copy on write: most events change neither).
func (r *Replica) own() {
	if r.shared {
		r.blocks = r.blocks.clone()
		r.clients = r.clients.clone()
		r.shared = false
	}
}

// Clone implements node.Node. Values and block contents are immutable and
// shared; blocks and the client table are shared until one side changes
// them; everything else is copied. Clone marks the original as shared
// too (the model checker serialises Clone calls on one node).
func (r *Replica) Clone() node.Node {
	r.shared = true
	c := *r
	c.log = append([]entry(nil), r.log...)
	c.p1 = append([]entry(nil), r.p1...)
	c.peerApplied = append([]uint64(nil), r.peerApplied...)
	return &c
}

func (e *entry) hash(h *node.Hasher) {
	h.Bool(e.accepted)
	if e.accepted {
		e.bal.hash(h)
		e.acc.hash(h)
	}
	h.Bool(e.chosen)
	if e.chosen {
		e.val.hash(h)
	}
	h.Uint64(e.votes)
}

// Hash implements node.Node: a canonical hash of the whole state.
func (r *Replica) Hash() uint64 {
	h := node.NewHasher()
	h.Int(r.group)
	h.Int(r.me)
	r.promised.hash(h)
	h.Uint64(r.gc)
	h.Int(len(r.log))
	for i := range r.log {
		r.log[i].hash(h)
	}
	h.Uint64(r.applied)
	h.Uint64(r.blocks.acc)
	h.Uint64(r.clients.acc)
	h.Int(int(r.role))
	r.bal.hash(h)
	h.Uint64(r.next)
	h.Uint64(r.promises)
	h.Uint64(r.p1Base)
	h.Int(len(r.p1))
	for i := range r.p1 {
		r.p1[i].hash(h)
	}
	h.Int(len(r.peerApplied))
	for _, a := range r.peerApplied {
		h.Uint64(a)
	}
	h.Bool(r.heard)
	h.Int(r.misses)
	return h.Sum()
}
