package paxos

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state of the core (what a baseline's node.Persistent writes for
// it), under the keys
//
//	p                 promised ballot, the log's base (GC point), applied
//	a/<slot, hex>     the acceptor's accepted value of the slot: ballot, value
//	c/<slot, hex>     the slot is chosen: whether its value is the accepted
//	                  one (same ID), else the value
//	t/<client, hex>   the client table's entry: sequence number, reply
//
// Everything is written when it changes: a/ when the replica accepts (or,
// leading, proposes) a value, c/ when it learns the slot is chosen, t/
// when the state machine executes a client's request, p when one of its
// fields changes; a/ and c/ are deleted when garbage collection discards
// the slot. The leader's state (ballot led, votes, phase 1 reports, next
// slot, the followers' progress) and the erasure-coded pieces a leader
// keeps are not written: a restarted replica is a follower (Init), which
// runs phase 1 with a fresh ballot before it proposes anything. The
// argument that this suffices is in docs/baselines.md.

// Codec writes a protocol's values in the core's records.
type Codec[V any] struct {
	Encode func(e *node.Enc, v V)
	Decode func(d *node.Dec) V
}

// Slot record parts changed since the last Persist.
const (
	dirtyAcc    uint8 = 1 << iota // a/
	dirtyChosen                   // c/
)

// persistMemo is what the core tracks for an incremental Persist (nil
// maps until TrackChanges).
type persistMemo struct {
	slots    map[uint64]uint8 // slot -> the parts changed
	clients  map[uint64]bool
	base     uint64 // the log's base at the last Persist: its slots' records are gone
	restored bool   // Restore read a persisted state: Init starts as a follower
	meta     meta   // the p record on disk
	metaOK   bool   // meta was written (or read) since TrackChanges
}

// meta is the p record.
type meta struct {
	promised      Ballot
	base, applied uint64
}

func (m persistMemo) clone() persistMemo {
	m.slots, m.clients = maps.Clone(m.slots), maps.Clone(m.clients)
	return m
}

// accepted notes that the replica accepted a value in slot s, entry e. A
// chosen slot's record is written again with it: whether the chosen value
// is the accepted one may have changed.
func (r *Replica[V, I, P]) accepted(s uint64, e *entry[V]) {
	if e.chosen {
		r.touch(s, dirtyAcc|dirtyChosen)
	} else {
		r.touch(s, dirtyAcc)
	}
}

// touch notes that part of slot s changed.
func (r *Replica[V, I, P]) touch(s uint64, part uint8) {
	if r.saved.slots != nil {
		r.saved.slots[s] |= part
	}
}

// TrackChanges starts recording what changes for PersistCore; everything
// held now counts as changed.
func (r *Replica[V, I, P]) TrackChanges() {
	r.saved.slots = make(map[uint64]uint8, len(r.log.Entries))
	for i := range r.log.Entries {
		e := &r.log.Entries[i]
		s := r.log.Base + 1 + uint64(i)
		if e.accepted {
			r.touch(s, dirtyAcc)
		}
		if e.chosen {
			r.touch(s, dirtyChosen)
		}
	}
	r.saved.clients = map[uint64]bool{}
	r.clients.Range(func(c uint64, _ ClientEntry) { r.saved.clients[c] = true })
	r.saved.base = r.log.Base // a writer from scratch holds no records of the slots before
	r.saved.metaOK = false
}

// PersistCore writes what changed in the core since the last call (or
// since TrackChanges), values with c.
func (r *Replica[V, I, P]) PersistCore(w node.Writer, c Codec[V]) {
	for s := r.saved.base + 1; s <= r.log.Base; s++ {
		w.Delete(slotKey("a/", s))
		w.Delete(slotKey("c/", s))
	}
	r.saved.base = r.log.Base
	for s, parts := range r.saved.slots {
		e := r.log.At(s)
		if e == nil {
			continue // discarded since: deleted above
		}
		if parts&dirtyAcc != 0 && e.accepted && Mutant != MutantUnsavedAccept {
			b := node.EncFor(w)
			e.bal.encode(b)
			c.Encode(b, e.acc)
			w.Put(slotKey("a/", s), b.B)
		}
		if parts&dirtyChosen != 0 && e.chosen {
			b := node.EncFor(w)
			same := e.accepted && e.acc.ID() == e.val.ID()
			b.Bool(same)
			if !same {
				c.Encode(b, e.val)
			}
			w.Put(slotKey("c/", s), b.B)
		}
	}
	clear(r.saved.slots)
	for cl := range r.saved.clients {
		e, _ := r.clients.Get(cl)
		b := node.EncFor(w)
		b.Uint64(e.Seq)
		e.Reply.Encode(b)
		w.Put(node.HexKey("t/", cl, 16), b.B)
	}
	clear(r.saved.clients)
	if m := r.meta(); !r.saved.metaOK || m != r.saved.meta {
		b := node.EncFor(w)
		m.promised.encode(b)
		b.Uint64(m.base)
		b.Uint64(m.applied)
		w.Put("p", b.B)
		r.saved.meta, r.saved.metaOK = m, true
	}
}

func (r *Replica[V, I, P]) meta() meta {
	return meta{promised: r.promised, base: r.log.Base, applied: r.applied}
}

// RestoreCore rebuilds the core's durable state from what PersistCore
// wrote, values with c. The replica must be as NewReplica made it. If it
// finds a persisted state, Init starts the replica as a follower.
func (r *Replica[V, I, P]) RestoreCore(rd node.Reader, c Codec[V]) error {
	who := fmt.Sprintf("paxos replica %d.%d", r.group, r.me)
	v, ok, err := rd.Get("p")
	if err != nil || !ok {
		return err
	}
	d := node.NewDec(v)
	r.promised = decodeBallot(d)
	r.log = Window[entry[V]]{Base: d.Uint64()}
	r.applied = d.Uint64()
	if err := d.Err(); err != nil {
		return fmt.Errorf("%s: bad record p: %v", who, err)
	}
	r.saved.restored = true
	r.saved.base = r.log.Base
	r.saved.meta, r.saved.metaOK = r.meta(), true
	err = scanSlots(rd, "a/", r.log.Base, func(s uint64, d *node.Dec) {
		e := r.log.Grow(s)
		e.bal = decodeBallot(d)
		e.acc, e.accepted = c.Decode(d), true
	})
	if err == nil {
		err = scanSlots(rd, "c/", r.log.Base, func(s uint64, d *node.Dec) {
			e := r.log.Grow(s)
			e.chosen = true
			if d.Bool() {
				e.val = e.acc
			} else {
				e.val = c.Decode(d)
			}
		})
	}
	if err == nil {
		err = rd.Scan("t/", func(k string, v []byte) error {
			cl, err := strconv.ParseUint(strings.TrimPrefix(k, "t/"), 16, 64)
			d := node.NewDec(v)
			e := ClientEntry{Seq: d.Uint64(), Reply: msg.DecodeReply(d)}
			if err == nil {
				err = d.Err()
			}
			if err != nil || !r.full {
				return fmt.Errorf("bad client record %q: %v", k, err)
			}
			r.clients.Put(cl, e)
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	// What was just read back is already durable.
	clear(r.saved.slots)
	clear(r.saved.clients)
	return nil
}

// scanSlots calls fn with the decoder of every slot record under prefix,
// in slot order; slots at or before base are an error.
func scanSlots(rd node.Reader, prefix string, base uint64, fn func(s uint64, d *node.Dec)) error {
	return rd.Scan(prefix, func(k string, v []byte) error {
		s, err := strconv.ParseUint(strings.TrimPrefix(k, prefix), 16, 64)
		if err == nil && s <= base {
			err = fmt.Errorf("slot %d is at or before the log's base %d", s, base)
		}
		if err != nil {
			return fmt.Errorf("bad slot record %q: %v", k, err)
		}
		d := node.NewDec(v)
		fn(s, d)
		if err := d.Err(); err != nil {
			return fmt.Errorf("bad slot record %q: %v", k, err)
		}
		return nil
	})
}

func slotKey(prefix string, s uint64) string { return node.HexKey(prefix, s, 16) }

func (b Ballot) encode(e *node.Enc) {
	e.Uint64(b.Round)
	e.Int(b.Leader)
}

func decodeBallot(d *node.Dec) Ballot { return Ballot{Round: d.Uint64(), Leader: d.Int()} }
