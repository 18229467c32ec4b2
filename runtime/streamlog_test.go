package runtime

import (
	"encoding/binary"
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
