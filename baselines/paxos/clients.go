package paxos

import (
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// ClientTable gives at-most-once execution: the last executed request of
// each client and its reply. Entries are immutable values; the table
// keeps the XOR of the entries' hashes up to date, so hashing it is O(1).
// The zero table is empty and read-only (witnesses hold no table).
type ClientTable struct {
	m   map[uint64]ClientEntry
	acc uint64
}

// ClientEntry is a client's last executed request and its reply.
type ClientEntry struct {
	Seq   uint64
	Reply msg.Reply
}

// NewClientTable returns an empty table.
func NewClientTable() ClientTable { return ClientTable{m: map[uint64]ClientEntry{}} }

// Get returns client c's entry.
func (t *ClientTable) Get(c uint64) (ClientEntry, bool) {
	e, ok := t.m[c]
	return e, ok
}

// Put sets client c's entry.
func (t *ClientTable) Put(c uint64, e ClientEntry) {
	if old, ok := t.m[c]; ok {
		t.acc ^= old.hash(c)
	}
	t.m[c] = e
	t.acc ^= e.hash(c)
}

// Clone returns a copy that shares the entries but not the map.
func (t ClientTable) Clone() ClientTable {
	if t.m == nil {
		return t
	}
	c := ClientTable{m: make(map[uint64]ClientEntry, len(t.m)), acc: t.acc}
	for k, v := range t.m {
		c.m[k] = v
	}
	return c
}

// Sum is a hash of the whole table.
func (t ClientTable) Sum() uint64 { return t.acc }

func (e ClientEntry) hash(c uint64) uint64 {
	h := node.NewHasher()
	h.Uint64(c)
	h.Uint64(e.Seq)
	e.Reply.Hash(h)
	return h.Sum()
}
