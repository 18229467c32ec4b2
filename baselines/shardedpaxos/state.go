package shardedpaxos

import (
	"slices"

	"github.com/amalgam-store/amalgam/node"
)

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
		r.clients = r.clients.Clone()
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
	c.log = r.log.Clone()
	c.p1 = r.p1.Clone()
	c.peerApplied = append([]uint64(nil), r.peerApplied...)
	return &c
}

func (e *entry) hash(h *node.Hasher) {
	h.Bool(e.accepted)
	if e.accepted {
		e.bal.Hash(h)
		e.acc.hash(h)
	}
	h.Bool(e.chosen)
	if e.chosen {
		e.val.hash(h)
	}
	h.Uint64(uint64(e.votes))
}

// Hash implements node.Node: a canonical hash of the whole state.
func (r *Replica) Hash() uint64 {
	h := node.NewHasher()
	h.Int(r.group)
	h.Int(r.me)
	r.promised.Hash(h)
	h.Uint64(r.log.Base)
	h.Int(len(r.log.Entries))
	for i := range r.log.Entries {
		r.log.Entries[i].hash(h)
	}
	h.Uint64(r.applied)
	h.Uint64(r.blocks.acc)
	h.Uint64(r.clients.Sum())
	h.Int(int(r.role))
	r.bal.Hash(h)
	h.Uint64(r.next)
	h.Uint64(uint64(r.promises))
	h.Uint64(r.p1.Base)
	h.Int(len(r.p1.Entries))
	for i := range r.p1.Entries {
		r.p1.Entries[i].hash(h)
	}
	h.Int(len(r.peerApplied))
	for _, a := range r.peerApplied {
		h.Uint64(a)
	}
	h.Uint64(r.hbCommit)
	h.Uint64(r.hbNext)
	h.Bool(r.heard)
	h.Int(r.misses)
	return h.Sum()
}
