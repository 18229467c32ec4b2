package parity

import (
	"slices"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Held is a PREPARE held by a parity server or witness.
type Held struct {
	P       msg.Prepare
	Applied bool
}

// PrepareSet is the prepares set of a parity server or witness. Entries
// are immutable values; the set keeps an order-independent hash.
type PrepareSet struct {
	m   map[msg.PrepKey]Held
	acc uint64
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
}

// Add holds p unless a PREPARE with its key is held already.
func (s *PrepareSet) Add(p msg.Prepare) {
	if _, ok := s.m[p.Key()]; !ok {
		s.put(p.Key(), Held{P: p})
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
	h := node.NewHasher()
	e.P.Hash(h)
	h.Bool(e.Applied)
	return h.Sum()
}

// Hash is an order-independent hash of the set.
func (s PrepareSet) Hash() uint64 { return s.acc }
