package data

import (
	"math/bits"
	"slices"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// clientTable gives at-most-once execution: the last request of each
// client and, once committed, its reply. Entries are immutable values, so
// a clone may share the map's contents after copying the map.
type clientTable struct {
	m   map[uint64]clientEntry
	acc uint64 // XOR of entry hashes, kept up to date by put
	// changed records clients whose entry changed since the last Persist;
	// nil (off) unless TrackChanges was called. Clones do not track.
	changed map[uint64]bool
}

type clientEntry struct {
	seq   uint64
	done  bool
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
	if t.changed != nil {
		t.changed[c] = true
	}
}

func (t clientTable) clone() clientTable {
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
	h.Bool(e.done)
	e.reply.Hash(h)
	return h.Sum()
}

// Clone implements node.Node.
func (s *Server) Clone() node.Node {
	c := *s
	c.blocks = s.blocks.Clone()
	c.clients = s.clients.clone()
	c.pending = make([]*pendingOp, len(s.pending))
	for i, p := range s.pending {
		cp := *p
		cp.parts = append([]part(nil), p.parts...)
		c.pending[i] = &cp
	}
	c.rc = s.rc.clone()
	c.saved.answers = nil         // clones do not track changes (as the client table)
	c.held = slices.Clone(s.held) // requests are never modified
	return &c
}

// Hash implements node.Node.
func (s *Server) Hash() uint64 {
	h := node.NewHasher()
	h.Uint64(s.cfgHash)
	h.Int(s.me)
	h.Uint64(s.opNum)
	h.Uint64(s.blocks.Hash())
	h.Uint64(s.clients.acc)
	h.Int(len(s.pending))
	for _, p := range s.pending {
		h.Uint64(p.opNum)
		h.Uint64(p.client)
		h.Uint64(p.seq)
		h.String(string(p.replyTo))
		p.reply.Hash(h)
		h.Bool(p.committed)
		for _, pt := range p.parts {
			h.Int(pt.stripe)
			h.Uint64(pt.acks)
			h.Bytes(pt.prep.Delta)
		}
	}
	s.rc.hash(h)
	h.Int(len(s.held))
	for _, r := range s.held {
		h.String(string(r.from))
		r.req.Hash(h)
	}
	h.Bool(s.pace.Waiting) // a rebuildPaused timer is pending: it changes what handlers do
	h.Bool(s.pace.Asked)   // a client request since the last background run started: it paces the next
	h.Int(s.pace.Owed)     // stripes rebuilt for held requests since then: they pace the next too
	return h.Sum()
}

func popcount(x uint64) int { return bits.OnesCount64(x) }
