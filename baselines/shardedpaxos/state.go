package shardedpaxos

import (
	"maps"
	"slices"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/node"
)

// blockMap holds a full replica's blocks. Contents are immutable (a
// change puts a new slice); acc is the XOR of the non-zero blocks' entry
// hashes, kept up to date by put, so that hashing is O(1) and a block of
// zeros hashes like a missing one.
type blockMap struct {
	m       map[uint64][]byte
	zero    []byte // read-only
	acc     uint64
	changed paxos.Changed // blocks put since the last Persist
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
	b.changed.Mark(id)
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
	c.changed = maps.Clone(b.changed)
	return c
}

// Clone implements node.Node. Values and block contents are immutable and
// shared; blocks and the client table are shared until one side changes
// them; everything else is copied. Clone marks the original as shared
// too (the model checker serialises Clone calls on one node).
func (r *Replica) Clone() node.Node {
	r.shared = true
	c := *r
	c.blocks.changed = maps.Clone(r.blocks.changed) // not shared: each side persists its own
	c.Replica = r.Replica.Clone((*app)(&c))
	return &c
}

// Hash implements node.Node: a canonical hash of the whole state.
func (r *Replica) Hash() uint64 {
	h := node.NewHasher()
	r.HashTo(h)
	h.Uint64(r.blocks.acc)
	return h.Sum()
}
