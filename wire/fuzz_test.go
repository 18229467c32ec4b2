package wire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/erasure"
)

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
