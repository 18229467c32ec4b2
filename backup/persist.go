package backup

import (
	"fmt"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state the backups share (node.Persistent): held PREPAREs under
// p/<shard>/<op_num>/<stripe> (whether applied, then msg.Prepare.Encode),
// and held stream messages as records.

// EarlyRecord is a held stream message (Early) as gob stores it.
type EarlyRecord struct {
	From    node.Addr
	Kind    int // 1 Prepare, 2 Commit, 3 PrepareDrop, 4 SnapshotMarker
	Prepare msg.Prepare
	Ref     msg.Commit // Commit and PrepareDrop have the same fields
	Marker  msg.SnapshotMarker
}

// EarlyToRecords converts held stream messages for storage.
func EarlyToRecords(e Early) []EarlyRecord {
	var out []EarlyRecord
	for _, x := range e {
		r := EarlyRecord{From: x.From}
		switch m := x.Msg.(type) {
		case msg.Prepare:
			r.Kind, r.Prepare = 1, m
		case msg.Commit:
			r.Kind, r.Ref = 2, m
		case msg.PrepareDrop:
			r.Kind, r.Ref = 3, msg.Commit(m)
		case msg.SnapshotMarker:
			r.Kind, r.Marker = 4, m
		default:
			panic(fmt.Sprintf("backup: cannot store an early %T", x.Msg)) // Ahead admits no other type
		}
		out = append(out, r)
	}
	return out
}

// EarlyFromRecords converts stored held messages back.
func EarlyFromRecords(rs []EarlyRecord) (Early, error) {
	var out Early
	for _, r := range rs {
		var m node.Message
		switch r.Kind {
		case 1:
			m = r.Prepare
		case 2:
			m = r.Ref
		case 3:
			m = msg.PrepareDrop(r.Ref)
		case 4:
			m = r.Marker
		default:
			return nil, fmt.Errorf("early message of kind %d", r.Kind)
		}
		out = append(out, Envelope{From: r.From, Msg: m})
	}
	return out, nil
}

func prepKey(k msg.PrepKey) string {
	return fmt.Sprintf("p/%08x/%016x/%08x", uint32(k.Shard), k.OpNum, uint32(k.Stripe))
}

// PersistPrepares writes the PREPAREs added, changed or removed since the
// last call (for parity servers and witnesses).
func PersistPrepares(s *PrepareSet, w node.Writer) {
	s.TakeChanged(func(k msg.PrepKey, e Held, ok bool) {
		node.PutOrDelete(w, prepKey(k), ok, func(b *node.Enc) {
			b.Bool(e.Applied)
			e.P.Encode(b)
		})
	})
}

// RestorePrepares reads back what PersistPrepares wrote.
func RestorePrepares(s *PrepareSet, r node.Reader) error {
	err := r.Scan("p/", func(k string, v []byte) error {
		d := node.NewDec(v)
		e := Held{Applied: d.Bool()}
		e.P = msg.DecodePrepare(d)
		if err := d.Err(); err != nil {
			return fmt.Errorf("bad prepare record %q: %v", k, err)
		}
		s.put(e.P.Key(), e)
		return nil
	})
	if err != nil {
		return err
	}
	s.TakeChanged(func(msg.PrepKey, Held, bool) {})
	return nil
}
