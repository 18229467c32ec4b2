package wire

import (
	"fmt"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// DecodeExecute decodes and checks a client request against layout l:
// identifiers, every op's arguments, that every block exists, and that all
// blocks are on one shard. It returns the ops and their shard, or a
// *FieldError naming the first bad field ("ops[1].offset"). Nothing about
// the request depends on server state, so a request it accepts is only
// rejected later for routing (wrong shard or configuration).
func DecodeExecute(req *ExecuteRequest, l erasure.Layout) ([]msg.Op, int, error) {
	if req.GetClientId() == 0 {
		return nil, 0, fieldErr("client_id", "must be non-zero")
	}
	if req.GetSeq() == 0 {
		return nil, 0, fieldErr("seq", "must be at least 1")
	}
	if len(req.GetOps()) == 0 {
		return nil, 0, fieldErr("ops", "a transaction needs at least one operation")
	}
	if len(req.GetOps()) > MaxTxnOps {
		return nil, 0, fieldErr("ops", "%d operations; at most %d per transaction", len(req.GetOps()), MaxTxnOps)
	}
	ops, err := OpsFromProto(req.GetOps())
	if err != nil {
		return nil, 0, err
	}
	shard := -1
	for i, op := range ops {
		f := fmt.Sprintf("ops[%d]", i)
		if err := CheckOp(op, l, f); err != nil {
			return nil, 0, err
		}
		s := l.Shard(op.Block)
		if shard < 0 {
			shard = s
		} else if s != shard {
			return nil, 0, fieldErr(f+".block", "block %d is on shard %d but ops[0] is on shard %d; a transaction must stay on one shard", op.Block, s, shard)
		}
	}
	return ops, shard, nil
}

// CheckOp checks one op against layout l; errors name field+".<name>".
func CheckOp(op msg.Op, l erasure.Layout, field string) error {
	if op.Block >= l.NumBlocks() {
		return fieldErr(field+".block", "block %d does not exist (the cluster has blocks 0 to %d)", op.Block, l.NumBlocks()-1)
	}
	err := op.Validate(l.BlockSize)
	if err == nil {
		return nil
	}
	name := "offset"
	room := l.BlockSize - op.Offset
	if op.Offset >= 0 && op.Offset < l.BlockSize {
		switch op.Kind {
		case msg.OpRead:
			name = "length"
		case msg.OpWrite, msg.OpXor:
			name = "data"
		case msg.OpCas:
			name = "expect"
			if len(op.Expect) > 0 && len(op.Expect) <= room {
				name = "data"
			}
		case msg.OpCheck:
			name = "expect"
		}
	}
	return fieldErr(field+"."+name, "%v", err)
}
