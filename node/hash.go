package node

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// Hasher builds canonical hashes of node state and messages. Writers must
// feed fields in a fixed order and sort anything that comes from a map.
type Hasher struct {
	d   xxhash.Digest
	buf [8]byte
}

// NewHasher returns an empty hasher.
func NewHasher() *Hasher {
	h := &Hasher{}
	h.d.Reset()
	return h
}

// Reset empties the hasher for reuse.
func (h *Hasher) Reset() { h.d.Reset() }

// Uint64 adds a number.
func (h *Hasher) Uint64(v uint64) {
	binary.LittleEndian.PutUint64(h.buf[:], v)
	_, _ = h.d.Write(h.buf[:])
}

// Int adds a number.
func (h *Hasher) Int(v int) { h.Uint64(uint64(v)) }

// Bool adds a flag.
func (h *Hasher) Bool(v bool) {
	var x uint64
	if v {
		x = 1
	}
	h.Uint64(x)
}

// Bytes adds a length-prefixed byte string (nil and empty hash alike).
func (h *Hasher) Bytes(b []byte) {
	h.Uint64(uint64(len(b)))
	_, _ = h.d.Write(b)
}

// OptBytes adds an optional byte string: whether it is present (not nil),
// then Bytes, so that nil and empty hash apart.
func (h *Hasher) OptBytes(b []byte) {
	h.Bool(b != nil)
	h.Bytes(b)
}

// String adds a length-prefixed string.
func (h *Hasher) String(s string) {
	h.Uint64(uint64(len(s)))
	_, _ = h.d.WriteString(s)
}

// Sum returns the hash of everything added so far.
func (h *Hasher) Sum() uint64 { return h.d.Sum64() }

// Uint64s adds the number of xs, then each of them.
func (h *Hasher) Uint64s(xs []uint64) { hashEach(h, xs, h.Uint64) }

// Ints adds the number of xs, then each of them.
func (h *Hasher) Ints(xs []int) { hashEach(h, xs, h.Int) }

// Bools adds the number of xs, then the flags packed eight to a byte (a
// server's degraded flags per stripe are hashed on every Persist: one
// write per flag cost more than the rest of the state).
func (h *Hasher) Bools(xs []bool) {
	h.Int(len(xs))
	var buf [512]byte
	for len(xs) > 0 {
		n := min(len(xs), 8*len(buf))
		clear(buf[:])
		for i, x := range xs[:n] {
			if x {
				buf[i>>3] |= 1 << (i & 7)
			}
		}
		_, _ = h.d.Write(buf[:(n+7)/8])
		xs = xs[n:]
	}
}

// OptBytesList adds the number of bs, then each with OptBytes.
func (h *Hasher) OptBytesList(bs [][]byte) { hashEach(h, bs, h.OptBytes) }

// HashStrings adds the number of xs, then each of them (for string types
// such as Addr).
func HashStrings[S ~string](h *Hasher, xs []S) {
	hashEach(h, xs, func(s S) { h.String(string(s)) })
}

// hashEach adds the number of xs, then each of them with add.
func hashEach[T any](h *Hasher, xs []T, add func(T)) {
	h.Int(len(xs))
	for _, x := range xs {
		add(x)
	}
}

// HashAll adds the number of xs, then each of them.
func HashAll[T interface{ Hash(*Hasher) }](h *Hasher, xs []T) {
	h.Int(len(xs))
	for _, x := range xs {
		x.Hash(h)
	}
}

// HashOf hashes a single message or timer value.
func HashOf(v interface{ Hash(*Hasher) }) uint64 {
	h := NewHasher()
	v.Hash(h)
	return h.Sum()
}
