package paxos

import (
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// ClientTable gives at-most-once execution: the last executed request of
// each client and its reply, hashed in O(1) (node.SumMap). The zero table
// is empty and read-only (witnesses hold no table).
type ClientTable = node.SumMap[uint64, ClientEntry]

// ClientEntry is a client's last executed request and its reply.
type ClientEntry struct {
	Seq   uint64
	Reply msg.Reply
}

// NewClientTable returns an empty table.
func NewClientTable() ClientTable { return node.NewSumMap(hashEntry) }

func hashEntry(c uint64, e ClientEntry) uint64 {
	h := node.NewHasher()
	h.Uint64(c)
	h.Uint64(e.Seq)
	e.Reply.Hash(h)
	return h.Sum()
}
