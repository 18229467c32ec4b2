package erasure

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// Blocks maps block ids to block contents for a data or parity server.
// Missing blocks read as zeros. Contents handed out by Get must not be
// modified; Put takes ownership of its slice. Clone shares contents with
// the copy, and Mutable copies a shared block before the first in-place
// change, so clones are cheap and independent.
//
// Blocks keeps a hash of its contents that Hash updates incrementally: only
// blocks changed since the last call are re-read.
type Blocks struct {
	size  int
	data  map[uint64][]byte
	owned map[uint64]bool   // blocks this copy may change in place
	seen  map[uint64]uint64 // content hash last folded into acc
	dirty map[uint64]bool
	acc   uint64 // XOR over blocks of entryHash(id, content hash)
	// changed records blocks changed since the last TakeChanged, for the
	// runtime's persistence, with how many times (marked: by Track); nil
	// (off) unless Track was called. It is separate from dirty, which Hash
	// clears. Clones do not track.
	changed map[uint64]uint8
}

// NewBlocks returns an empty map of blocks of the given size.
func NewBlocks(size int) *Blocks {
	return &Blocks{size: size, data: map[uint64][]byte{}, owned: map[uint64]bool{},
		seen: map[uint64]uint64{}, dirty: map[uint64]bool{}}
}

// Size is the block size in bytes.
func (b *Blocks) Size() int { return b.size }

// Len is the number of blocks stored (non-zero or written once).
func (b *Blocks) Len() int { return len(b.data) }

// Get returns the block's contents, read-only. A missing block is zeros.
func (b *Blocks) Get(id uint64) []byte {
	if v, ok := b.data[id]; ok {
		return v
	}
	return make([]byte, b.size)
}

// Put replaces a block's contents; b takes ownership of v.
func (b *Blocks) Put(id uint64, v []byte) {
	b.data[id] = v
	b.owned[id] = true
	b.dirty[id] = true
	b.noteChange(id)
}

// marked is a changed count that Track set, not a write.
const marked = 255

func (b *Blocks) noteChange(id uint64) {
	if b.changed != nil {
		if n := b.changed[id]; n < marked-1 {
			b.changed[id] = n + 1
		}
	}
}

// ChangedOnce reports whether the block was written exactly once (one Put
// or Mutable) since the last TakeChanged, and Track did not mark it.
func (b *Blocks) ChangedOnce(id uint64) bool { return b.changed != nil && b.changed[id] == 1 }

// Mutable returns the block for changing in place, copying it first if it
// is shared with a clone. The caller must change it before the next Hash.
func (b *Blocks) Mutable(id uint64) []byte {
	v, ok := b.data[id]
	if !ok || !b.owned[id] {
		nv := make([]byte, b.size)
		copy(nv, v)
		v = nv
		b.data[id] = v
		b.owned[id] = true
	}
	b.dirty[id] = true
	b.noteChange(id)
	return v
}

// Share returns the block's contents for a copy-on-write copy that the
// caller keeps: b copies the block before its next in-place change, so
// the returned slice keeps the contents of now. The caller must not
// change it (copy it first).
func (b *Blocks) Share(id uint64) []byte {
	v, ok := b.data[id]
	if !ok {
		return make([]byte, b.size)
	}
	delete(b.owned, id)
	return v
}

// IDs calls fn for every stored block id, in no particular order.
func (b *Blocks) IDs(fn func(id uint64)) {
	for id := range b.data {
		fn(id)
	}
}

// Clone returns an independent copy sharing the block contents.
func (b *Blocks) Clone() *Blocks {
	c := &Blocks{size: b.size, acc: b.acc,
		data:  make(map[uint64][]byte, len(b.data)),
		owned: map[uint64]bool{},
		seen:  make(map[uint64]uint64, len(b.seen)),
		dirty: make(map[uint64]bool, len(b.dirty)),
	}
	for k, v := range b.data {
		c.data[k] = v
	}
	for k, v := range b.seen {
		c.seen[k] = v
	}
	for k := range b.dirty {
		c.dirty[k] = true
	}
	clear(b.owned) // contents are now shared
	return c
}

// Hash is a canonical hash of the contents: equal contents hash equal.
func (b *Blocks) Hash() uint64 {
	for id := range b.dirty {
		if old, ok := b.seen[id]; ok {
			b.acc ^= entryHash(id, old)
		}
		h := contentHash(b.data[id])
		b.seen[id] = h
		b.acc ^= entryHash(id, h)
	}
	clear(b.dirty)
	return b.acc
}

// contentHash hashes a block; an all-zero block hashes like a missing one.
func contentHash(v []byte) uint64 {
	for _, x := range v {
		if x != 0 {
			return xxhash.Sum64(v)
		}
	}
	return 0
}

func entryHash(id, h uint64) uint64 {
	if h == 0 {
		return 0
	}
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], id)
	binary.LittleEndian.PutUint64(buf[8:], h)
	return xxhash.Sum64(buf[:])
}

// Track starts recording changed blocks for TakeChanged. Every block held
// now counts as changed.
func (b *Blocks) Track() {
	b.changed = make(map[uint64]uint8, len(b.data))
	for id := range b.data {
		b.changed[id] = marked
	}
}

// TakeChanged calls fn with every block changed since the previous call
// (or since Track), in no particular order, and forgets them. The contents
// are read-only and only valid during the call.
func (b *Blocks) TakeChanged(fn func(id uint64, v []byte)) {
	for id := range b.changed {
		fn(id, b.data[id])
	}
	clear(b.changed)
}
