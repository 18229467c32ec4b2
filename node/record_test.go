package node_test

import (
	"fmt"
	"testing"

	"github.com/amalgam-store/amalgam/node"
)

func TestAppendHexIsFmtHex(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xf, 0x10, 0xabc, 0xffffffff, 1 << 32, 0x0123456789abcdef, ^uint64(0)} {
		for _, d := range []int{0, 1, 8, 16} {
			if got, want := string(node.AppendHex([]byte("x/"), v, d)), fmt.Sprintf("x/%0*x", d, v); got != want {
				t.Errorf("AppendHex(%#x, %d) = %q, want %q", v, d, got, want)
			}
		}
	}
	if got := node.HexKey("o/", 0x2a, 16); got != "o/000000000000002a" {
		t.Errorf("HexKey = %q", got)
	}
}

// lender is a Writer that lends its buffer, as the runtime's does.
type lender struct {
	node.Disk
	enc node.Enc
}

func (l *lender) LendEnc() *node.Enc { return &l.enc }

func TestEncForReusesALentBufferAndValuesSurvive(t *testing.T) {
	w := &lender{Disk: node.Disk{}}
	node.PutOrDelete(w, "a", true, func(e *node.Enc) { e.String("first record") })
	node.PutOrDelete(w, "b", true, func(e *node.Enc) { e.String("2nd") })
	if e := node.EncFor(w); e != &w.enc || len(e.B) != 0 {
		t.Fatalf("EncFor did not return the lent buffer, emptied: %p %q", e, e.B)
	}
	for k, want := range map[string]string{"a": "first record", "b": "2nd"} {
		if got := node.NewDec(w.Disk[k]).String(); got != want {
			t.Errorf("record %s = %q, want %q", k, got, want)
		}
	}
	if e := node.EncFor(node.Disk{}); e == nil || len(e.B) != 0 {
		t.Fatalf("EncFor without a lender: %v", e)
	}
}
