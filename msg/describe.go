package msg

import (
	"fmt"
	"strings"
)

// String renders the op compactly for traces and reports: kind, block,
// offset and what the kind carries ("write b0@0=0101", "add b4@0+=5").
func (op Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s b%d@%d", op.Kind, op.Block, op.Offset)
	switch op.Kind {
	case OpRead:
		fmt.Fprintf(&b, "+%d", op.Length)
	case OpWrite, OpXor:
		fmt.Fprintf(&b, "=%x", op.Data)
	case OpAdd:
		fmt.Fprintf(&b, "+=%d", op.Delta)
	case OpCas:
		fmt.Fprintf(&b, " %x->%x", op.Expect, op.Data)
	case OpCheck:
		fmt.Fprintf(&b, "==%x", op.Expect)
	}
	return b.String()
}
