package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"google.golang.org/protobuf/proto"
)

// roundTrip encodes m, marshals it to bytes and back, and decodes it.
func roundTrip(t *testing.T, m node.Message) node.Message {
	t.Helper()
	p, err := MessageToProto(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q Message
	if err := proto.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	got, err := MessageFromProto(&q)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// roundTripAll checks that each message survives the round trip with its
// hash, and returns the number of message types among them.
func roundTripAll(t *testing.T, cases []node.Message) int {
	t.Helper()
	seen := map[reflect.Type]bool{}
	for _, m := range cases {
		got := roundTrip(t, m)
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip changed the message:\n got %#v\nwant %#v", got, m)
		}
		if node.HashOf(got) != node.HashOf(m) {
			t.Errorf("round trip changed the hash of %T", m)
		}
		seen[reflect.TypeOf(m)] = true
	}
	return len(seen)
}

func TestMessageRoundTrip(t *testing.T) {
	ops := []msg.Op{
		{Kind: msg.OpRead, Block: 7, Offset: 3, Length: 9},
		{Kind: msg.OpWrite, Block: 1 << 40, Offset: 1, Data: []byte{1, 2, 3}},
		{Kind: msg.OpXor, Block: 2, Data: []byte{0xff}},
		{Kind: msg.OpAdd, Block: 3, Offset: 8, Delta: ^uint64(0)},
		{Kind: msg.OpCas, Block: 4, Offset: 2, Expect: []byte{0}, Data: []byte{9}},
		{Kind: msg.OpCheck, Block: 5, Expect: []byte{4, 4}},
	}
	cases := []node.Message{
		msg.Request{Client: 1<<63 + 5, Seq: 42, Ops: ops},
		msg.Request{Client: 1, Seq: 1},
		msg.Reply{Seq: 3, Outcome: msg.Outcome{Results: []msg.Result{{Data: []byte{1, 2}}, {Value: 77}, {OK: true}, {}}}},
		msg.Reply{Seq: 4, Outcome: msg.Outcome{Aborted: true}},
		msg.Reply{Seq: 5, Err: "bad operation: no data"},
		msg.Prepare{Shard: 2, Primary: 3, OpNum: 99, Stripe: 17, Pos: 1, Delta: []byte{0, 1, 0, 2}, Stripes: []int{4, 17}, Client: 8, Seq: 9,
			Reply: &msg.Reply{Seq: 9, Outcome: msg.Outcome{Results: []msg.Result{{Value: 3}, {Data: []byte{7}, OK: true}}}}},
		msg.Prepare{Shard: 0, Primary: 1, OpNum: 1, Stripe: 0, Pos: 0, Delta: nil, Stripes: []int{0}, Client: 1, Seq: 1},
		msg.Prepare{Shard: 1, Primary: 1, OpNum: 2, Stripe: 3, Delta: []byte{}, Stripes: []int{3}},
		msg.PrepareOK{Shard: 1, Primary: 2, OpNum: 3, Stripe: 4, Inc: 5},
		msg.Commit{Shard: 4, Primary: 3, OpNum: 2, Stripe: 1},
		msg.PrepareDrop{Shard: 9, Primary: 8, OpNum: 7, Stripe: 6},
	}
	types := roundTripAll(t, cases)
	// Every message type of package msg is covered, and nil vs empty delta
	// (read-only prepare vs a zero-length change) survives.
	if types != 6 {
		t.Errorf("covered %d message types, want 6", types)
	}
	if d := roundTrip(t, cases[6]).(msg.Prepare).Delta; d != nil {
		t.Errorf("nil delta came back as %v", d)
	}
	if d := roundTrip(t, cases[7]).(msg.Prepare).Delta; d == nil {
		t.Error("empty delta came back nil")
	}
}

type alien struct{}

func (alien) Hash(*node.Hasher) {}

func TestUnknownMessages(t *testing.T) {
	if _, err := MessageToProto(alien{}); err == nil {
		t.Error("encoded an unknown message type")
	}
	if _, err := MessageFromProto(&Message{}); err == nil {
		t.Error("decoded an empty message")
	}
}

func TestOpFromProtoNamesField(t *testing.T) {
	cases := []struct {
		ops   []*Op
		field string
	}{
		{[]*Op{nil}, "ops[0]"},
		{[]*Op{{Kind: OpKind_OP_KIND_READ}, {Kind: 0}}, "ops[1].kind"},
		{[]*Op{{Kind: 42}}, "ops[0].kind"},
		{[]*Op{{Kind: OpKind_OP_KIND_READ, Offset: -1}}, "ops[0].offset"},
		{[]*Op{{Kind: OpKind_OP_KIND_READ, Length: 1 << 40}}, "ops[0].length"},
	}
	for _, tc := range cases {
		_, err := OpsFromProto(tc.ops)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.HasPrefix(err.Error(), tc.field+": ") {
			t.Errorf("OpsFromProto(%v) = %v, want a FieldError on %s", tc.ops, err, tc.field)
		}
	}
}

// FuzzDecodeExecute feeds arbitrary bytes to the client request decoder.
// Whatever it accepts must be a valid transaction on one shard; whatever
// it rejects must be a FieldError. Seeds: f.Add below and testdata/fuzz.
func FuzzDecodeExecute(f *testing.F) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 4, BlockSize: 16}
	seed := func(r *ExecuteRequest) {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(&ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*Op{{Kind: OpKind_OP_KIND_READ, Block: 3}}})
	seed(&ExecuteRequest{ClientId: 1, Seq: 2, Ops: []*Op{{Kind: OpKind_OP_KIND_WRITE, Block: 0, Offset: 15, Data: []byte{1}}}})
	seed(&ExecuteRequest{ClientId: 7, Seq: 9, Ops: []*Op{
		{Kind: OpKind_OP_KIND_CHECK, Block: 0, Expect: []byte{0}},
		{Kind: OpKind_OP_KIND_ADD, Block: 0, Offset: 8, Delta: 3},
		{Kind: OpKind_OP_KIND_CAS, Block: 0, Expect: []byte{0}, Data: []byte{1}}}})
	seed(&ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*Op{{Kind: OpKind_OP_KIND_XOR, Block: 99, Data: []byte{1}}}})
	seed(&ExecuteRequest{ClientId: 1, Seq: 1, Ops: []*Op{{Kind: 17, Offset: -5}}})
	f.Add([]byte{0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var req ExecuteRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		ops, shard, err := DecodeExecute(&req, l)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("rejection %v is not a FieldError naming a field", err)
			}
			return
		}
		if len(ops) == 0 || len(ops) > MaxTxnOps {
			t.Fatalf("accepted %d ops", len(ops))
		}
		for i, op := range ops {
			if op.Block >= l.NumBlocks() || l.Shard(op.Block) != shard {
				t.Fatalf("accepted op %d on block %d (shard %d)", i, op.Block, shard)
			}
			if err := op.Validate(l.BlockSize); err != nil {
				t.Fatalf("accepted invalid op %d: %v", i, err)
			}
		}
	})
}
