package msg

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Outcome is the result of a transaction: one Result per op, or Aborted
// when a check failed (then nothing was applied).
type Outcome struct {
	Results []Result
	Aborted bool
}

// ValidateTxn checks every op of a transaction and that each block is one
// that owns reports as local. Nothing is applied when it fails.
func ValidateTxn(ops []Op, blockSize int, owns func(block uint64) bool) error {
	if len(ops) == 0 {
		return fmt.Errorf("%w: empty transaction", ErrBadOp)
	}
	for i, op := range ops {
		if err := op.Validate(blockSize); err != nil {
			if len(ops) > 1 {
				return fmt.Errorf("op %d: %w", i, err)
			}
			return err
		}
		if !owns(op.Block) {
			return fmt.Errorf("%w: block %d is not on this shard", ErrBadOp, op.Block)
		}
	}
	return nil
}

// Execute runs a validated transaction against blocks, read through get.
// It returns the outcome and the new contents of every block it changed
// (fresh slices: the inputs are never modified). Ops apply in order, so a
// later op sees an earlier op's effect. Execute is the sequential
// specification of the store: servers and the linearizability model share it.
func Execute(ops []Op, get func(block uint64) []byte) (Outcome, map[uint64][]byte) {
	cur := map[uint64][]byte{}
	block := func(b uint64) []byte {
		if v, ok := cur[b]; ok {
			return v
		}
		return get(b)
	}
	written := map[uint64][]byte{}
	writable := func(b uint64) []byte {
		if v, ok := written[b]; ok {
			return v
		}
		v := append([]byte(nil), block(b)...)
		written[b] = v
		cur[b] = v
		return v
	}
	out := Outcome{Results: make([]Result, len(ops))}
	for i, op := range ops {
		r := &out.Results[i]
		switch op.Kind {
		case OpRead:
			b := block(op.Block)
			end := len(b)
			if op.Length > 0 {
				end = op.Offset + op.Length
			}
			r.Data = append([]byte(nil), b[op.Offset:end]...)
		case OpWrite:
			copy(writable(op.Block)[op.Offset:], op.Data)
		case OpXor:
			b := writable(op.Block)[op.Offset:]
			for j, x := range op.Data {
				b[j] ^= x
			}
		case OpAdd:
			b := writable(op.Block)[op.Offset : op.Offset+8]
			v := binary.LittleEndian.Uint64(b) + op.Delta
			binary.LittleEndian.PutUint64(b, v)
			r.Value = v
		case OpCas:
			old := block(op.Block)[op.Offset : op.Offset+len(op.Expect)]
			r.Data = append([]byte(nil), old...)
			if bytes.Equal(old, op.Expect) {
				copy(writable(op.Block)[op.Offset:], op.Data)
				r.OK = true
			}
		case OpCheck:
			// Checked in order, so a check sees the txn's earlier ops;
			// on failure the private copies in written are dropped.
			b := block(op.Block)
			if !bytes.Equal(b[op.Offset:op.Offset+len(op.Expect)], op.Expect) {
				return Outcome{Aborted: true}, nil
			}
			r.OK = true
		}
	}
	return out, written
}
