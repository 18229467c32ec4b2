package paxos

import "slices"

// Window is a run of consecutive log slots: Entries[i] is slot Base+1+i.
// A replica's log starts after its garbage-collection point; a
// candidate's phase 1 reports start after its applied prefix. E is the
// protocol's entry for one slot.
type Window[E any] struct {
	Base    uint64
	Entries []E
}

// At returns the entry of slot s, or nil if s is at or before Base or
// beyond the last entry.
func (w *Window[E]) At(s uint64) *E {
	if s <= w.Base || s > w.Last() {
		return nil
	}
	return &w.Entries[s-w.Base-1]
}

// Grow returns the entry of slot s > Base, adding zero entries up to it.
func (w *Window[E]) Grow(s uint64) *E {
	for w.Last() < s {
		var zero E
		w.Entries = append(w.Entries, zero)
	}
	return &w.Entries[s-w.Base-1]
}

// Last is the last slot in the window (Base when it is empty).
func (w *Window[E]) Last() uint64 { return w.Base + uint64(len(w.Entries)) }

// Discard drops the slots up to s and makes s the base, if s is past it.
func (w *Window[E]) Discard(s uint64) {
	if s <= w.Base {
		return
	}
	k := min(s-w.Base, uint64(len(w.Entries)))
	w.Entries = slices.Clone(w.Entries[k:])
	w.Base = s
}

// Clone returns a copy with its own entries (a shallow copy of each).
func (w Window[E]) Clone() Window[E] {
	return Window[E]{Base: w.Base, Entries: append([]E(nil), w.Entries...)}
}
