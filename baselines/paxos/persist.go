package paxos

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state of a replica (node.Persistent): the core's, under the
// keys
//
//	p                 promised ballot, the log's base (GC point), applied
//	a/<slot, hex>     the acceptor's accepted value of the slot: ballot, value
//	c/<slot, hex>     the slot is chosen: whether its value is the accepted
//	                  one (same ID), else the value
//	t/<client, hex>   the client table's entry: sequence number, reply
//
// and the App's own, under keys of its own (App.PersistApp). Values are
// written with Value.Encode.
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

// Slot record parts changed since the last Persist.
const (
	dirtyAcc    uint8 = 1 << iota // a/
	dirtyChosen                   // c/
)

// persistMemo is what the core tracks for an incremental Persist (nil
// maps until TrackChanges).
type persistMemo struct {
	slots    map[uint64]uint8 // slot -> the parts changed
	clients  Changed          // client table entries
	base     uint64           // the log's base at the last Persist: its slots' records are gone
	restored bool             // Restore read a persisted state: Init starts as a follower
	meta     meta             // the p record on disk
	metaOK   bool             // meta was written (or read) since TrackChanges
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

// TrackChanges implements node.Persistent: it starts recording what
// changes for Persist; everything held now counts as changed.
func (r *Replica[V, I, P]) TrackChanges() {
	r.app.TrackApp()
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
	r.saved.clients = Changed{}
	r.clients.Range(func(c uint64, _ ClientEntry) { r.saved.clients.Mark(c) })
	r.saved.base = r.log.Base // a writer from scratch holds no records of the slots before
	r.saved.metaOK = false
}

// Persist implements node.Persistent: it writes what changed since the
// last call (or since TrackChanges).
func (r *Replica[V, I, P]) Persist(w node.Writer) {
	r.app.PersistApp(w)
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
			e.acc.Encode(b)
			w.Put(slotKey("a/", s), b.B)
		}
		if parts&dirtyChosen != 0 && e.chosen {
			b := node.EncFor(w)
			same := e.accepted && e.acc.ID() == e.val.ID()
			b.Bool(same)
			if !same {
				e.val.Encode(b)
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

// Restore implements node.Persistent: it rebuilds the state from what
// Persist wrote. The replica must be as NewReplica made it, with the
// configuration it ran with before. If it finds a persisted state, Init
// starts the replica as a follower.
func (r *Replica[V, I, P]) Restore(rd node.Reader) error {
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
		e.acc, e.accepted = r.app.DecodeValue(d), true
	})
	if err == nil {
		err = scanSlots(rd, "c/", r.log.Base, func(s uint64, d *node.Dec) {
			e := r.log.Grow(s)
			e.chosen = true
			if d.Bool() {
				e.val = e.acc
			} else {
				e.val = r.app.DecodeValue(d)
			}
		})
	}
	if err == nil {
		err = ScanRecords(rd, "t/", func(cl uint64, d *node.Dec) error {
			if !r.full {
				return fmt.Errorf("a witness holds no client table")
			}
			r.clients.Put(cl, ClientEntry{Seq: d.Uint64(), Reply: msg.DecodeReply(d)})
			return nil
		})
	}
	if err == nil {
		err = r.app.RestoreApp(rd)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	// What was just read back is already durable.
	clear(r.saved.slots)
	clear(r.saved.clients)
	return nil
}

// scanSlots is ScanRecords of the slot records under prefix; slots at or
// before base are an error.
func scanSlots(rd node.Reader, prefix string, base uint64, fn func(s uint64, d *node.Dec)) error {
	return ScanRecords(rd, prefix, func(s uint64, d *node.Dec) error {
		if s <= base {
			return fmt.Errorf("slot %d is at or before the log's base %d", s, base)
		}
		fn(s, d)
		return nil
	})
}

// ScanRecords calls fn, in key order, for every record under prefix whose
// key is prefix and a number in hex (node.HexKey), with the number and a
// decoder of the record. A key that is not such a number, an error fn
// returns, or a record fn does not read exactly (node.Dec.Err) ends the
// scan with an error naming the key.
func ScanRecords(rd node.Reader, prefix string, fn func(n uint64, d *node.Dec) error) error {
	return rd.Scan(prefix, func(k string, v []byte) error {
		n, err := strconv.ParseUint(strings.TrimPrefix(k, prefix), 16, 64)
		d := node.NewDec(v)
		if err == nil {
			err = fn(n, d)
		}
		if err == nil {
			err = d.Err()
		}
		if err != nil {
			return fmt.Errorf("bad record %q: %v", k, err)
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

// Changed is the set of an App's records changed since its last
// PersistApp, by key; nil until TrackApp.
type Changed map[uint64]bool

// TrackAll returns the set of every key of m, for TrackApp.
func TrackAll[T any](m map[uint64]T) Changed {
	c := make(Changed, len(m))
	for k := range m {
		c[k] = true
	}
	return c
}

// Mark adds k to the set, if changes are tracked.
func (c Changed) Mark(k uint64) {
	if c != nil {
		c[k] = true
	}
}
