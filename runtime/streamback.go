package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble"
	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Stream log records backed by the node's own records (node.Backer).
//
// A data server keeps each PREPARE it streams, delta included, in its
// pending operation's record. When the node names the record that holds a
// message it streams (Backer.Backing), the stream log record holds a
// reference instead of the encoded message:
//
//	0, the references (as in a full record), uvarint len(key), key, uvarint i
//
// so the message is written to disk once. A node record must outlive the
// streams' need for the message: when the node's Persist puts or deletes a
// key that backs a record some stream still holds (not acknowledged, its
// stream not ended), the same batch rewrites that record in full. On
// restart the loop asks the restored node for the message
// (Backer.Backed). A backed record whose node record is gone was held by
// no stream when the node deleted it, so every stream had it
// acknowledged: the record is dropped.

// backRef names the node record that holds a streamed message.
type backRef struct {
	key string
	i   int
	ok  bool
}

// backed is a backed record the loop may have to rewrite in full.
type backed struct {
	key  string
	refs []byte // the record's references, encoded
	m    *wire.Message
	size int
}

// backings are a loop's backed records. Loop goroutine only.
type backings struct {
	byID  map[uint64]backed
	byKey map[string][]uint64
}

// backing asks the node which of its records holds m, if it is a
// node.Backer with a store.
func (l *loop) backing(m node.Message) backRef {
	b, ok := l.n.(node.Backer)
	if !ok || l.h.opts.Store == nil {
		return backRef{}
	}
	k, i, ok := b.Backing(m)
	return backRef{k, i, ok}
}

// add records backed record id.
func (bs *backings) add(id uint64, r backed) {
	if bs.byID == nil {
		bs.byID, bs.byKey = map[uint64]backed{}, map[string][]uint64{}
	}
	bs.byID[id] = r
	bs.byKey[r.key] = append(bs.byKey[r.key], id)
}

// forget drops record id (deleted, or about to be).
func (bs *backings) forget(id uint64) {
	r, ok := bs.byID[id]
	if !ok {
		return
	}
	delete(bs.byID, id)
	ids := slices.DeleteFunc(bs.byKey[r.key], func(x uint64) bool { return x == id })
	if len(ids) == 0 {
		delete(bs.byKey, r.key)
	} else {
		bs.byKey[r.key] = ids
	}
}

// touched is called for every key the node's Persist puts or deletes: the
// records that key backs and that a stream still holds are written in
// full into b.
func (l *loop) touched(b *pebble.Batch, key string) {
	ids := l.backs.byKey[key]
	if len(ids) == 0 {
		return
	}
	for _, id := range slices.Clone(ids) {
		r := l.backs.byID[id]
		l.log.mu.Lock()
		held := l.log.refs[id] > 0
		l.log.mu.Unlock()
		if held {
			writeFull(b, bodyKey(l.addr, id), r.refs, r.m, r.size, l.addr)
		}
		l.backs.forget(id)
	}
}

// writeFull writes a full stream log record: its references, then m.
func writeFull(b *pebble.Batch, k, refs []byte, m *wire.Message, size int, a node.Addr) {
	op := b.SetDeferred(len(k), len(refs)+size)
	copy(op.Key, k)
	v := append(op.Value[:0], refs...)
	v, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(v, m)
	if err != nil || len(v) != len(refs)+size {
		panic(fmt.Sprintf("runtime: %s: encoding a stream message: %d bytes of %d, %v", a, len(v)-len(refs), size, err))
	}
	_ = op.Finish()
}

// writeBacked writes a backed record.
func (l *loop) writeBacked(b *pebble.Batch, k []byte, id uint64, refs []byte, e outEntry, r backRef) {
	v := append([]byte{0}, refs...)
	v = binary.AppendUvarint(v, uint64(len(r.key)))
	v = append(v, r.key...)
	v = binary.AppendUvarint(v, uint64(r.i))
	_ = b.Set(k, v, nil)
	l.backs.add(id, backed{key: r.key, refs: refs, m: e.m, size: e.size})
}

// restoreBacked reads a backed record's message back from the node,
// given what follows its references; nil if the node holds it no more.
func (l *loop) restoreBacked(id uint64, refs, rest []byte) (*wire.Message, int, error) {
	ln, r := binary.Uvarint(rest)
	if r <= 0 || uint64(len(rest)-r) < ln {
		return nil, 0, errors.New("bad backed stream log record")
	}
	key := string(rest[r : r+int(ln)])
	i, r2 := binary.Uvarint(rest[r+int(ln):])
	if r2 <= 0 {
		return nil, 0, errors.New("bad backed stream log record")
	}
	b, ok := l.n.(node.Backer)
	if !ok {
		return nil, 0, fmt.Errorf("stream log record %d is backed by %q, but the node keeps no stream messages", id, key)
	}
	m, ok := b.Backed(key, int(i))
	if !ok {
		return nil, 0, nil
	}
	p, err := wire.MessageToProto(m)
	if err != nil {
		return nil, 0, err
	}
	size := proto.Size(p)
	l.backs.add(id, backed{key: key, refs: slices.Clone(refs), m: p, size: size})
	return p, size, nil
}
