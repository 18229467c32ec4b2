// Package backup holds what Amalgam's two kinds of backup, parity servers
// (package parity) and witnesses (package witness), share: the set of held
// PREPAREs and its durable form, the acceptance rule for a PREPARE, and
// the stream messages held back until the receiver knows the sender's
// configuration. Like its users, it is deterministic.
package backup

import (
	"slices"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Acceptable reports whether the server playing role on machine me accepts
// PREPARE m: it comes from the shard's current data server, for a stripe in
// which me plays role, at the shard's position, with a block-sized delta or
// none.
func Acceptable(cfg msg.Config, me int, role erasure.Role, m msg.Prepare) bool {
	l := cfg.Layout
	if !FromPrimary(cfg, m.Shard, m.Primary) || m.Stripe < 0 || m.Stripe >= l.Stripes {
		return false
	}
	if r, _ := l.RoleOf(m.Stripe, me); r != role {
		return false
	}
	r, pos := l.RoleOf(m.Stripe, m.Shard)
	return r == erasure.RoleData && pos == m.Pos && (m.Delta == nil || len(m.Delta) == l.BlockSize)
}

// Fenced lists the data servers of the shards marked in stopped (a
// backup's per-shard StopShard fences).
func Fenced(stopped []bool) []node.Addr {
	var out []node.Addr
	for sh, s := range stopped {
		if s {
			out = append(out, msg.DataAddr(sh))
		}
	}
	return out
}

// FromPrimary reports whether primary is the current data server of shard.
func FromPrimary(cfg msg.Config, shard int, primary uint64) bool {
	return shard >= 0 && shard < len(cfg.Data) && cfg.Data[shard] == primary
}

// Held is a PREPARE held by a parity server or witness.
type Held struct {
	P       msg.Prepare
	Applied bool
	ph      uint64 // hash of P, cached: P may carry a whole block's delta
}

// PrepareSet is the prepares set of a parity server or witness. Entries
// are immutable values; the set keeps an order-independent hash.
type PrepareSet struct {
	m   map[msg.PrepKey]Held
	acc uint64
	// changed records keys added, changed or removed since the last
	// TakeChanged; nil (off) unless Track was called. Clones do not track.
	changed map[msg.PrepKey]bool
}

// NewPrepareSet returns an empty set.
func NewPrepareSet() PrepareSet { return PrepareSet{m: map[msg.PrepKey]Held{}} }

// Get returns the PREPARE held under k.
func (s *PrepareSet) Get(k msg.PrepKey) (Held, bool) {
	e, ok := s.m[k]
	return e, ok
}

func (s *PrepareSet) put(k msg.PrepKey, e Held) {
	s.Remove(k)
	s.m[k] = e
	s.acc ^= e.hash()
	if s.changed != nil {
		s.changed[k] = true
	}
}

// Add holds p unless a PREPARE with its key is held already.
func (s *PrepareSet) Add(p msg.Prepare) {
	if _, ok := s.m[p.Key()]; !ok {
		s.put(p.Key(), Held{P: p, ph: node.HashOf(p)})
	}
}

// MarkApplied records that k's delta has been applied.
func (s *PrepareSet) MarkApplied(k msg.PrepKey) {
	if e, ok := s.m[k]; ok {
		e.Applied = true
		s.put(k, e)
	}
}

// Remove drops the PREPARE held under k.
func (s *PrepareSet) Remove(k msg.PrepKey) {
	if e, ok := s.m[k]; ok {
		s.acc ^= e.hash()
		delete(s.m, k)
		if s.changed != nil {
			s.changed[k] = true
		}
	}
}

// OfShard returns the held PREPAREs of shard, in key order.
func (s *PrepareSet) OfShard(shard int) []msg.Prepare {
	var out []msg.Prepare
	for _, h := range s.List() {
		if h.P.Shard == shard {
			out = append(out, h.P)
		}
	}
	return out
}

// RemoveShard drops the held PREPAREs of shard.
func (s *PrepareSet) RemoveShard(shard int) {
	for k := range s.m {
		if k.Shard == shard {
			s.Remove(k)
		}
	}
}

// HoldsOn reports whether a held PREPARE is for stripe st.
func (s *PrepareSet) HoldsOn(st int) bool {
	for k := range s.m {
		if k.Stripe == st {
			return true
		}
	}
	return false
}

// List returns the held PREPAREs in key order.
func (s *PrepareSet) List() []Held {
	out := make([]Held, 0, len(s.m))
	for _, e := range s.m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Held) int {
		switch {
		case a.P.Key().Less(b.P.Key()):
			return -1
		case b.P.Key().Less(a.P.Key()):
			return 1
		}
		return 0
	})
	return out
}

// Clone returns an independent copy.
func (s PrepareSet) Clone() PrepareSet {
	c := PrepareSet{m: make(map[msg.PrepKey]Held, len(s.m)), acc: s.acc}
	for k, v := range s.m {
		c.m[k] = v
	}
	return c
}

func (e Held) hash() uint64 {
	ph := e.ph
	if ph == 0 {
		ph = node.HashOf(e.P)
	}
	if e.Applied {
		return ph ^ 0x9e3779b97f4a7c15
	}
	return ph
}

// Hash is an order-independent hash of the set.
func (s PrepareSet) Hash() uint64 { return s.acc }

// Track starts recording changed keys for TakeChanged. Every PREPARE held
// now counts as changed.
func (s *PrepareSet) Track() {
	s.changed = make(map[msg.PrepKey]bool, len(s.m))
	for k := range s.m {
		s.changed[k] = true
	}
}

// TakeChanged calls fn for every key changed since the previous call, with
// the PREPARE now held under it (ok false if none), and forgets them.
func (s *PrepareSet) TakeChanged(fn func(k msg.PrepKey, e Held, ok bool)) {
	for k := range s.changed {
		e, ok := s.m[k]
		fn(k, e, ok)
	}
	clear(s.changed)
}
