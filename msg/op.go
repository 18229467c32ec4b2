// Package msg defines Amalgam's operations and the protocol messages that
// data, parity and witness servers and clients exchange.
package msg

import (
	"errors"
	"fmt"

	"github.com/amalgam-store/amalgam/node"
)

// Kind is an operation kind.
type Kind uint8

// The built-in read-modify-write operations. All are atomic.
const (
	OpRead  Kind = iota + 1 // read Length bytes at Offset (Length 0: to the end)
	OpWrite                 // write Data at Offset
	OpXor                   // xor Data into the block at Offset
	OpAdd                   // little-endian uint64 at Offset += Delta; returns the new value
	OpCas                   // if bytes at Offset equal Expect, write Data; returns the old bytes
	OpCheck                 // condition: the txn aborts unless bytes at Offset equal Expect
)

var kindNames = map[Kind]string{OpRead: "read", OpWrite: "write", OpXor: "xor", OpAdd: "add", OpCas: "cas", OpCheck: "check"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// ParseKind maps a name ("read", "write", ...) to its Kind.
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown op %q (want read, write, xor, add, cas or check)", s)
}

// Op is one operation on one block.
type Op struct {
	Kind   Kind
	Block  uint64
	Offset int
	Length int    // read: bytes to read (0 means to the end of the block)
	Data   []byte // write, xor: bytes; cas: new bytes
	Expect []byte // cas, check: expected bytes
	Delta  uint64 // add: the addend
}

// Result is what one op returns.
type Result struct {
	Data  []byte // read: the bytes; cas: the old bytes
	Value uint64 // add: the new value
	OK    bool   // cas: swapped; check: held
}

// ErrBadOp marks an operation rejected for its arguments.
var ErrBadOp = errors.New("bad operation")

// Validate checks op's arguments against a block size.
func (op Op) Validate(blockSize int) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s on block %d: %s", ErrBadOp, op.Kind, op.Block, fmt.Sprintf(format, a...))
	}
	if op.Offset < 0 || op.Offset >= blockSize {
		return bad("offset %d is outside the block (size %d)", op.Offset, blockSize)
	}
	room := blockSize - op.Offset
	switch op.Kind {
	case OpRead:
		if op.Length < 0 || op.Length > room {
			return bad("length %d runs past the block (%d bytes left at offset %d)", op.Length, room, op.Offset)
		}
	case OpWrite, OpXor:
		if len(op.Data) == 0 {
			return bad("no data")
		}
		if len(op.Data) > room {
			return bad("%d bytes run past the block (%d bytes left at offset %d)", len(op.Data), room, op.Offset)
		}
	case OpAdd:
		if room < 8 {
			return bad("an 8-byte counter does not fit at offset %d", op.Offset)
		}
	case OpCas:
		if len(op.Expect) == 0 || len(op.Expect) != len(op.Data) {
			return bad("expect and new data must be the same, non-zero length (got %d and %d)", len(op.Expect), len(op.Data))
		}
		if len(op.Data) > room {
			return bad("%d bytes run past the block (%d bytes left at offset %d)", len(op.Data), room, op.Offset)
		}
	case OpCheck:
		if len(op.Expect) == 0 || len(op.Expect) > room {
			return bad("expect must be 1 to %d bytes, got %d", room, len(op.Expect))
		}
	default:
		return fmt.Errorf("%w: unknown op kind %d", ErrBadOp, uint8(op.Kind))
	}
	return nil
}

// Hash adds the op to h.
func (op Op) Hash(h *node.Hasher) { op.fields(h) }

// fields writes op's fields to h: its record (EncodeOps), and its hash.
func (op Op) fields(h node.Fields) {
	h.Uint64(uint64(op.Kind))
	h.Uint64(op.Block)
	h.Int(op.Offset)
	h.Int(op.Length)
	h.Bytes(op.Data)
	h.Bytes(op.Expect)
	h.Uint64(op.Delta)
}

// Hash adds the result to h.
func (r Result) Hash(h *node.Hasher) { r.fields(h) }
