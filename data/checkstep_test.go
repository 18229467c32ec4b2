package data

import (
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// CheckStep, the immediate safety check's rule for data servers: a step
// commits only operations with f acknowledgements on every stripe, in op
// order, including an operation committed and dropped from pending_ops
// in the same step (with no witnesses, every parity server acknowledged
// it, so it leaves at once).
func TestCheckStep(t *testing.T) {
	srv := func(ops ...*pendingOp) *Server {
		return &Server{cfg: msg.Config{Layout: erasure.Layout{N: 5, G: 3, F: 2}}, pending: ops}
	}
	op := func(n uint64, committed bool, acks ...uint64) *pendingOp {
		p := &pendingOp{opNum: n, committed: committed}
		for s, a := range acks {
			p.parts = append(p.parts, part{stripe: s, acks: a})
		}
		return p
	}
	for _, tc := range []struct {
		name          string
		before, after *Server
		want          string // "" for a step that keeps the rule
	}{
		{"nothing changes", srv(op(1, false, 1)), srv(op(1, false, 1)), ""},
		{"commit with f acks", srv(op(1, false, 1)), srv(op(1, true, 3)), ""},
		{"commit with f-1 acks", srv(op(1, false, 0)), srv(op(1, true, 1)), "commits op 1 with 1 of 2 acknowledgements on stripe 0"},
		{"a transaction short on its second stripe", srv(op(1, false, 0, 0)), srv(op(1, true, 3, 1)), "commits op 1 with 1 of 2 acknowledgements on stripe 1"},
		{"commit past an uncommitted op", srv(op(1, false, 1), op(2, false, 1)), srv(op(1, false, 1), op(2, true, 3)), "commits op 2 before op 1"},
		{"commit and drop past an uncommitted op", srv(op(1, false, 1), op(2, false, 1)), srv(op(1, false, 1)), "commits op 2 before op 1"},
		{"commit and drop in order", srv(op(1, false, 1), op(2, false, 1)), srv(op(2, false, 1)), ""},
	} {
		err := CheckStep(tc.before, tc.after)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
