package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/cockroachdb/pebble"
	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// The outgoing stream log: one record per distinct message, shared by
// its streams.
//
// A node often streams one message to several peers in a batch (a data
// server's PREPARE, with its delta, to each parity server and witness of
// the stripe). Such a message is encoded once and stored once, under
// b\x00<addr>\x00<id> (id: 8 bytes big-endian, numbered by the loop in
// the order its batches are persisted), with a header naming every
// (peer, stream id, number) it was given: the references, one per stream,
// followed by the encoded wire.Message. A stream's meta record
// (m\x00<addr>\x00<to>: stream id, next number) is written in the same
// batch.
//
// The loop counts, for each record, the streams' entries that hold it
// (acknowledged, or their stream ended, they hold it no more); the first
// batch after the count reaches zero deletes the record. On restart a
// record's references to streams that ended (no meta record with that
// stream id) are skipped, references to acknowledged numbers are resent
// and dropped by the receiver by number, and the counts start over.

func bodyPrefix(a node.Addr) []byte { return append(key("b", string(a)), 0) }
func bodyKey(a node.Addr, id uint64) []byte {
	return binary.BigEndian.AppendUint64(bodyPrefix(a), id)
}

// sameMessage reports whether m was streamed just before as prev, so that
// its encoding can be shared.
func sameMessage(prev, m node.Message) bool {
	return prev != nil && reflect.TypeOf(prev) == reflect.TypeOf(m) && reflect.DeepEqual(prev, m)
}

// writeAppends writes the batch's stream messages into b: one record per
// run of appends that share their message.
func (l *loop) writeAppends(b *pebble.Batch, as []appended) {
	for i := 0; i < len(as); {
		j := i + 1
		for j < len(as) && as[j].e.body == as[i].e.body {
			j++
		}
		var hdr []byte
		hdr = binary.AppendUvarint(hdr, uint64(j-i))
		for _, a := range as[i:j] {
			hdr = binary.AppendUvarint(hdr, uint64(len(a.o.to)))
			hdr = append(hdr, a.o.to...)
			hdr = binary.BigEndian.AppendUint64(hdr, a.o.sid)
			hdr = binary.BigEndian.AppendUint64(hdr, a.e.seq)
		}
		id := as[i].e.body
		k := bodyKey(l.addr, id)
		if as[i].bk.ok {
			l.writeBacked(b, k, id, hdr, as[i].e, as[i].bk)
		} else {
			writeFull(b, k, hdr, as[i].e.m, as[i].e.size, l.addr)
		}
		i = j
	}
}

// streamLog is a loop's count of the holders of each stream log record.
type streamLog struct {
	mu   sync.Mutex
	refs map[uint64]int
	free []uint64 // held no more: the loop's next batch deletes them
}

// ref counts one more holder of record id. With a store only.
func (s *streamLog) ref(id uint64) {
	s.mu.Lock()
	if s.refs == nil {
		s.refs = map[uint64]int{}
	}
	s.refs[id]++
	s.mu.Unlock()
}

// unref drops holders of the records of es.
func (s *streamLog) unref(es []outEntry) {
	if len(es) == 0 {
		return
	}
	s.mu.Lock()
	for _, e := range es {
		if n, ok := s.refs[e.body]; ok {
			if n > 1 {
				s.refs[e.body] = n - 1
			} else {
				delete(s.refs, e.body)
				s.free = append(s.free, e.body)
			}
		}
	}
	s.mu.Unlock()
}

// forgetAcked deletes from the store, in b (the batch the loop is about to
// commit), the stream log records that no stream holds any more. Loop
// goroutine only. The deletes need no sync of their own: if they are
// lost, the messages are resent and the receiver drops them by number.
func (l *loop) forgetAcked(b *pebble.Batch) {
	l.log.mu.Lock()
	free := l.log.free
	l.log.free = nil
	l.log.mu.Unlock()
	for _, id := range free {
		_ = b.Delete(bodyKey(l.addr, id), nil)
		l.backs.forget(id)
	}
}

// restoreOut reads the stream log back into the queues of the streams
// restored from their meta records.
func (l *loop) restoreOut() error {
	if err := l.migrateOut(); err != nil {
		return err
	}
	pre := bodyPrefix(l.addr)
	return l.h.opts.Store.scan(pre, func(k, v []byte) error {
		if len(k) != len(pre)+8 {
			return fmt.Errorf("bad stream log key %q", k)
		}
		id := beUint64(k[len(pre):])
		l.nextBody = id + 1
		isBacked := len(v) > 0 && v[0] == 0 // streamback.go
		if isBacked {
			v = v[1:]
		}
		all := v
		n, r := binary.Uvarint(v)
		if r <= 0 {
			return errors.New("bad stream log record")
		}
		v = v[r:]
		type ref struct {
			o   *outStream
			seq uint64
		}
		var refs []ref
		for range n {
			ln, r := binary.Uvarint(v)
			if r <= 0 || uint64(len(v)-r) < ln+16 {
				return errors.New("bad stream log record")
			}
			to := node.Addr(v[r : r+int(ln)])
			v = v[r+int(ln):]
			sid, seq := beUint64(v), beUint64(v[8:])
			v = v[16:]
			if o := l.out[to]; o != nil && o.sid == sid && seq < o.next {
				refs = append(refs, ref{o, seq})
			}
		}
		if len(refs) == 0 {
			l.log.free = append(l.log.free, id)
			return nil
		}
		m, size := &wire.Message{}, len(v)
		if isBacked {
			var err error
			m, size, err = l.restoreBacked(id, all[:len(all)-len(v)], v)
			if err != nil {
				return err
			}
			if m == nil { // every stream had it acknowledged
				l.log.free = append(l.log.free, id)
				return nil
			}
		} else if err := proto.Unmarshal(v, m); err != nil {
			return err
		}
		for _, r := range refs {
			if q := r.o.q; len(q) > 0 && q[len(q)-1].seq+1 != r.seq {
				// Every unacknowledged message is here, so what
				// precedes a gap was acknowledged.
				l.log.unref(q)
				r.o.q = nil
			}
			r.o.q = append(r.o.q, outEntry{seq: r.seq, m: m, size: size, body: id})
			l.log.ref(id)
		}
		return nil
	})
}

// migrateOut moves a store's stream messages of the layout before the
// shared log (one record per stream and number, under
// o\x00<addr>\x00<to>\x00<seq>) into log records, in one synced batch.
func (l *loop) migrateOut() error {
	st := l.h.opts.Store
	pre := append(key("o", string(l.addr)), 0)
	b := st.db.NewBatch()
	defer b.Close()
	var id uint64
	found := false
	err := st.scan(pre, func(k, v []byte) error {
		found = true
		rest := k[len(pre):]
		i := len(rest) - 9
		if i < 0 || rest[i] != 0 {
			return fmt.Errorf("bad stream key %q", k)
		}
		to, seq := node.Addr(rest[:i]), beUint64(rest[i+1:])
		o := l.out[to]
		if o == nil {
			return nil // its stream ended
		}
		hdr := binary.AppendUvarint(nil, 1)
		hdr = binary.AppendUvarint(hdr, uint64(len(to)))
		hdr = append(hdr, to...)
		hdr = binary.BigEndian.AppendUint64(hdr, o.sid)
		hdr = binary.BigEndian.AppendUint64(hdr, seq)
		id++ // ids from 1: the old layout has no log records
		return b.Set(bodyKey(l.addr, id), append(hdr, v...), nil)
	})
	if err != nil || !found {
		return err
	}
	_ = b.DeleteRange(pre, prefixEnd(pre), nil)
	return b.Commit(pebble.Sync)
}
