package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// TestStreamLogMigrates opens a store whose stream messages are in the
// layout before the shared log (one record per stream and number): they
// are queued again, in order, and the old records are gone.
func TestStreamLogMigrates(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	old := func(to node.Addr, seq uint64) []byte {
		k := append(key("o", "data/0", string(to)), 0)
		return binary.BigEndian.AppendUint64(k, seq)
	}
	b := st.db.NewBatch()
	_ = b.Set(outMetaKey("data/0", "parity/1"), pair(7, 4), nil)
	for seq := uint64(2); seq <= 3; seq++ {
		p, err := wire.MessageToProto(msg.Commit{OpNum: seq})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := proto.Marshal(p)
		_ = b.Set(old("parity/1", seq), v, nil)
		_ = b.Set(old("parity/9", seq), v, nil) // a stream that ended: no meta record
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	h := NewHost(Options{Store: st, BlockSize: 64})
	if err := h.AddNode("data/0", &counter{}); err != nil {
		t.Fatal(err)
	}
	o := h.loop("data/0").out["parity/1"]
	if o == nil || o.sid != 7 || len(o.q) != 2 {
		t.Fatalf("restored stream %+v", o)
	}
	for i, e := range o.q {
		m, err := wire.MessageFromProto(e.m)
		if err != nil || e.seq != uint64(i+2) || m != (msg.Commit{OpNum: e.seq}) {
			t.Fatalf("entry %d: number %d, %v, %v", i, e.seq, m, err)
		}
	}
	left := 0
	_ = st.scan(append(key("o", "data/0"), 0), func([]byte, []byte) error { left++; return nil })
	if left > 0 {
		t.Fatalf("%d records of the old layout left", left)
	}
	_ = st.Close()
}

// backer keeps a PREPARE per operation in its own records and backs the
// stream log with them: a Commit makes operation OpNum and streams its
// PREPARE to two peers, a PrepareDrop forgets it.
type backer struct {
	ops     map[uint64]msg.Prepare
	changed map[uint64]bool
}

var backerPeers = []node.Addr{"parity/1", "parity/2"}

func newBacker() *backer { return &backer{ops: map[uint64]msg.Prepare{}, changed: map[uint64]bool{}} }

func opDelta(n uint64) []byte { return bytes.Repeat([]byte{byte(n)}, 4096) }

func (b *backer) Init(node.Context) {}
func (b *backer) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	switch m := m.(type) {
	case msg.Commit:
		p := msg.Prepare{OpNum: m.OpNum, Stripe: 1, Delta: opDelta(m.OpNum)}
		b.ops[m.OpNum], b.changed[m.OpNum] = p, true
		for _, to := range backerPeers {
			ctx.Stream(to, p)
		}
	case msg.PrepareDrop:
		delete(b.ops, m.OpNum)
		b.changed[m.OpNum] = true
	}
}
func (b *backer) Timer(node.Context, node.Timer) {}
func (b *backer) Clone() node.Node               { return b }
func (b *backer) Hash() uint64                   { return uint64(len(b.ops)) }
func (b *backer) TrackChanges()                  {}

func (b *backer) Persist(w node.Writer) {
	for n := range b.changed {
		node.PutOrDelete(w, node.HexKey("o/", n, 16), b.ops[n].Delta != nil, func(e *node.Enc) { b.ops[n].Encode(e) })
	}
	clear(b.changed)
}

func (b *backer) Restore(r node.Reader) error {
	return r.Scan("o/", func(k string, v []byte) error {
		n, err := strconv.ParseUint(strings.TrimPrefix(k, "o/"), 16, 64)
		b.ops[n] = msg.DecodePrepare(node.NewDec(v))
		return err
	})
}

func (b *backer) Backing(m node.Message) (string, int, bool) {
	p, ok := m.(msg.Prepare)
	if q, found := b.ops[p.OpNum]; ok && found && q.Same(p) {
		return node.HexKey("o/", p.OpNum, 16), 0, true
	}
	return "", 0, false
}

func (b *backer) Backed(k string, i int) (node.Message, bool) {
	n, err := strconv.ParseUint(strings.TrimPrefix(k, "o/"), 16, 64)
	p, ok := b.ops[n]
	return p, ok && err == nil && i == 0
}

// logRecords returns data/0's stream log records by id.
func logRecords(t *testing.T, st *Store) map[uint64][]byte {
	t.Helper()
	recs := map[uint64][]byte{}
	pre := bodyPrefix("data/0")
	if err := st.scan(pre, func(k, v []byte) error {
		recs[beUint64(k[len(pre):])] = bytes.Clone(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestStreamLogBacked streams PREPAREs that the node's records hold, to
// peers that never acknowledge them: each is stored once, in the node's
// record, with a reference in the stream log; dropping the node's record
// writes the log record in full in the same batch; after a restart every
// stream queues the same messages again, from either kind of record.
func TestStreamLogBacked(t *testing.T) {
	dir := t.TempDir()
	open := func(n *backer) (*Store, *Host) {
		st, err := OpenStore(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h := NewHost(Options{Listener: ln, Resolve: func(node.Addr) (string, bool) { return "", false }, BlockSize: 64, Store: st})
		if err := h.AddNode("data/0", n); err != nil {
			t.Fatal(err)
		}
		h.Start()
		return st, h
	}
	ctx := context.Background()
	st, h := open(newBacker())
	for _, m := range []node.Message{msg.Commit{OpNum: 1}, msg.Commit{OpNum: 2}, msg.PrepareDrop{OpNum: 1}} {
		if err := h.Deliver(ctx, "client/1", "data/0", m); err != nil {
			t.Fatal(err)
		}
		if err := h.Inspect(ctx, "data/0", func(node.Node) {}); err != nil { // the batch before is persisted
			t.Fatal(err)
		}
	}
	h.Stop()
	recs := logRecords(t, st)
	if len(recs) != 2 {
		t.Fatalf("%d stream log records, want one per PREPARE (2)", len(recs))
	}
	for id, v := range recs {
		full := !(len(v) > 0 && v[0] == 0)
		switch id {
		case 0: // operation 1, whose node record was deleted
			if !full || len(v) < 4096 {
				t.Fatalf("record of the dropped operation: %d bytes, full %v; want the message in full", len(v), full)
			}
		case 1:
			if full || len(v) >= 4096 {
				t.Fatalf("record of a pending operation: %d bytes, full %v; want a reference", len(v), full)
			}
		default:
			t.Fatalf("unexpected record %d", id)
		}
	}
	_ = st.Close()

	st, h = open(newBacker())
	defer func() { h.Stop(); _ = st.Close() }()
	l := h.loop("data/0")
	for _, to := range backerPeers {
		o := l.out[to]
		if o == nil || len(o.q) != 2 {
			t.Fatalf("stream to %s restored as %+v", to, o)
		}
		for i, e := range o.q {
			m, err := wire.MessageFromProto(e.m)
			want := msg.Prepare{OpNum: uint64(i + 1), Stripe: 1, Delta: opDelta(uint64(i + 1))}
			if p, ok := m.(msg.Prepare); err != nil || e.seq != uint64(i+1) || !ok || !p.Same(want) {
				t.Fatalf("stream to %s, entry %d: number %d, %v, %v", to, i, e.seq, m, err)
			}
		}
	}
}

// TestStreamLogBackedGone restores a backed record whose node record is
// gone: its streams had it acknowledged, so it is dropped and freed, and
// the full record after it is queued.
func TestStreamLogBackedGone(t *testing.T) {
	st, err := OpenStore(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	refs := func(seq uint64) []byte {
		v := binary.AppendUvarint(nil, 1)
		v = binary.AppendUvarint(v, uint64(len("parity/1")))
		v = append(v, "parity/1"...)
		v = binary.BigEndian.AppendUint64(v, 7)
		return binary.BigEndian.AppendUint64(v, seq)
	}
	back := append([]byte{0}, refs(3)...)
	back = binary.AppendUvarint(back, uint64(len("o/gone")))
	back = append(back, "o/gone"...)
	back = binary.AppendUvarint(back, 0)
	p, err := wire.MessageToProto(msg.Commit{OpNum: 4})
	if err != nil {
		t.Fatal(err)
	}
	b := st.db.NewBatch()
	_ = b.Set(outMetaKey("data/0", "parity/1"), pair(7, 5), nil)
	_ = b.Set(bodyKey("data/0", 1), back, nil)
	writeFull(b, bodyKey("data/0", 2), refs(4), p, proto.Size(p), "data/0")
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	h := NewHost(Options{Store: st, BlockSize: 64})
	if err := h.AddNode("data/0", newBacker()); err != nil {
		t.Fatal(err)
	}
	l := h.loop("data/0")
	o := l.out["parity/1"]
	if o == nil || len(o.q) != 1 || o.q[0].seq != 4 {
		t.Fatalf("restored stream %+v", o)
	}
	if len(l.log.free) != 1 || l.log.free[0] != 1 {
		t.Fatalf("records to delete: %v, want [1]", l.log.free)
	}
	_ = st.Close()
}
