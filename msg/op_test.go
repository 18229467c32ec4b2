package msg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/node"
)

const bs = 16 // block size used by these tests

func TestValidate(t *testing.T) {
	b := func(n int) []byte { return bytes.Repeat([]byte{1}, n) }
	cases := []struct {
		name string
		op   Op
		want string // "" for valid; else a substring of the error
	}{
		// read
		{"read whole block", Op{Kind: OpRead}, ""},
		{"read to end from offset", Op{Kind: OpRead, Offset: 15}, ""},
		{"read exact end", Op{Kind: OpRead, Offset: 4, Length: 12}, ""},
		{"read length past end", Op{Kind: OpRead, Offset: 4, Length: 13}, "length 13 runs past the block"},
		{"read negative length", Op{Kind: OpRead, Length: -1}, "length -1"},
		{"read offset past block", Op{Kind: OpRead, Offset: 16}, "offset 16 is outside the block"},
		{"read negative offset", Op{Kind: OpRead, Offset: -1}, "offset -1 is outside the block"},
		// write
		{"write whole block", Op{Kind: OpWrite, Data: b(16)}, ""},
		{"write at offset", Op{Kind: OpWrite, Offset: 10, Data: b(6)}, ""},
		{"write past end", Op{Kind: OpWrite, Offset: 10, Data: b(7)}, "7 bytes run past the block"},
		{"write empty data", Op{Kind: OpWrite, Offset: 3}, "no data"},
		{"write offset past block", Op{Kind: OpWrite, Offset: 20, Data: b(1)}, "offset 20 is outside the block"},
		{"write negative offset", Op{Kind: OpWrite, Offset: -3, Data: b(1)}, "offset -3 is outside the block"},
		// xor
		{"xor", Op{Kind: OpXor, Offset: 15, Data: b(1)}, ""},
		{"xor past end", Op{Kind: OpXor, Offset: 15, Data: b(2)}, "2 bytes run past the block"},
		{"xor empty data", Op{Kind: OpXor}, "no data"},
		// add
		{"add at start", Op{Kind: OpAdd, Delta: 1}, ""},
		{"add at last room", Op{Kind: OpAdd, Offset: 8, Delta: 1}, ""},
		{"add with 7 bytes room", Op{Kind: OpAdd, Offset: 9}, "8-byte counter does not fit at offset 9"},
		{"add offset past block", Op{Kind: OpAdd, Offset: 16}, "outside the block"},
		// cas
		{"cas", Op{Kind: OpCas, Offset: 12, Expect: b(4), Data: b(4)}, ""},
		{"cas length mismatch", Op{Kind: OpCas, Expect: b(2), Data: b(3)}, "expect and new data must be the same, non-zero length (got 2 and 3)"},
		{"cas empty", Op{Kind: OpCas}, "non-zero length (got 0 and 0)"},
		{"cas past end", Op{Kind: OpCas, Offset: 14, Expect: b(3), Data: b(3)}, "3 bytes run past the block"},
		// check
		{"check", Op{Kind: OpCheck, Offset: 8, Expect: b(8)}, ""},
		{"check empty expect", Op{Kind: OpCheck}, "expect must be 1 to 16 bytes, got 0"},
		{"check past end", Op{Kind: OpCheck, Offset: 8, Expect: b(9)}, "expect must be 1 to 8 bytes, got 9"},
		// unknown
		{"unknown kind", Op{Kind: 42}, "unknown op kind 42"},
		{"zero kind", Op{}, "unknown op kind 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op.Validate(bs)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", tc.op, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error mentioning %q", tc.op, tc.want)
			}
			if !errors.Is(err, ErrBadOp) {
				t.Errorf("error %q does not wrap ErrBadOp", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestValidateNamesKindAndBlock(t *testing.T) {
	err := Op{Kind: OpWrite, Block: 77, Offset: 3}.Validate(bs)
	if err == nil || !strings.Contains(err.Error(), "write on block 77") {
		t.Fatalf("error %q should name the op kind and block", err)
	}
}

func TestValidateTxn(t *testing.T) {
	owns := func(b uint64) bool { return b%2 == 0 }
	good := Op{Kind: OpRead, Block: 2}
	if err := ValidateTxn([]Op{good, {Kind: OpWrite, Block: 4, Data: []byte{1}}}, bs, owns); err != nil {
		t.Fatalf("valid txn rejected: %v", err)
	}

	err := ValidateTxn(nil, bs, owns)
	if err == nil || !errors.Is(err, ErrBadOp) || !strings.Contains(err.Error(), "empty transaction") {
		t.Errorf("empty txn: %v", err)
	}
	err = ValidateTxn([]Op{}, bs, owns)
	if err == nil || !errors.Is(err, ErrBadOp) {
		t.Errorf("empty txn: %v", err)
	}

	err = ValidateTxn([]Op{{Kind: OpRead, Block: 3}}, bs, owns)
	if err == nil || !errors.Is(err, ErrBadOp) || !strings.Contains(err.Error(), "block 3 is not on this shard") {
		t.Errorf("block not owned: %v", err)
	}
	err = ValidateTxn([]Op{good, {Kind: OpRead, Block: 5}}, bs, owns)
	if err == nil || !errors.Is(err, ErrBadOp) || !strings.Contains(err.Error(), "block 5 is not on this shard") {
		t.Errorf("block not owned in a txn: %v", err)
	}

	// A bad op in a multi-op txn is reported with its index.
	err = ValidateTxn([]Op{good, good, {Kind: OpWrite, Block: 2}}, bs, owns)
	if err == nil || !errors.Is(err, ErrBadOp) || !strings.Contains(err.Error(), "op 2:") || !strings.Contains(err.Error(), "no data") {
		t.Errorf("bad op 2: %v", err)
	}
	// A single op needs no index.
	err = ValidateTxn([]Op{{Kind: OpWrite, Block: 2}}, bs, owns)
	if err == nil || strings.Contains(err.Error(), "op 0") {
		t.Errorf("single bad op: %v", err)
	}
	// Validation runs before ownership: a bad op on a foreign block reports the op.
	err = ValidateTxn([]Op{{Kind: OpRead, Block: 3, Offset: 99}}, bs, owns)
	if err == nil || !strings.Contains(err.Error(), "outside the block") {
		t.Errorf("bad op on foreign block: %v", err)
	}
}

// store is a tiny block map for Execute tests.
type store map[uint64][]byte

func (s store) get(b uint64) []byte {
	if v, ok := s[b]; ok {
		return v
	}
	return make([]byte, bs)
}

func (s store) clone() store {
	c := store{}
	for k, v := range s {
		c[k] = bytes.Clone(v)
	}
	return c
}

func seq(start byte) []byte {
	b := make([]byte, bs)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func le(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}

func TestExecuteRead(t *testing.T) {
	s := store{1: seq(0)}
	out, written := Execute([]Op{
		{Kind: OpRead, Block: 1},
		{Kind: OpRead, Block: 1, Offset: 5},
		{Kind: OpRead, Block: 1, Offset: 5, Length: 3},
		{Kind: OpRead, Block: 9},
	}, s.get)
	if out.Aborted || len(written) != 0 {
		t.Fatalf("read aborted or wrote: %+v %v", out, written)
	}
	want := [][]byte{seq(0), seq(0)[5:], {5, 6, 7}, make([]byte, bs)}
	for i, w := range want {
		if !bytes.Equal(out.Results[i].Data, w) {
			t.Errorf("read %d = %x, want %x", i, out.Results[i].Data, w)
		}
	}
	// The result is a copy.
	out.Results[0].Data[0] = 0xff
	if s[1][0] != 0 {
		t.Fatal("read result aliases the block")
	}
}

func TestExecuteWriteXor(t *testing.T) {
	s := store{1: seq(0)}
	orig := s.clone()
	out, written := Execute([]Op{{Kind: OpWrite, Block: 1, Offset: 4, Data: []byte{0xa, 0xb}}}, s.get)
	if out.Aborted || len(out.Results) != 1 {
		t.Fatalf("outcome %+v", out)
	}
	want := seq(0)
	want[4], want[5] = 0xa, 0xb
	if !bytes.Equal(written[1], want) || len(written) != 1 {
		t.Fatalf("written = %x, want block 1 = %x", written, want)
	}
	if !bytes.Equal(s[1], orig[1]) {
		t.Fatal("Execute modified its input block")
	}

	out, written = Execute([]Op{{Kind: OpXor, Block: 1, Offset: 14, Data: []byte{0xff, 0x0f}}}, s.get)
	want = seq(0)
	want[14] ^= 0xff
	want[15] ^= 0x0f
	if out.Aborted || !bytes.Equal(written[1], want) {
		t.Fatalf("xor wrote %x, want %x", written[1], want)
	}
	if !bytes.Equal(s[1], orig[1]) {
		t.Fatal("Execute modified its input block")
	}

	// A write to a missing block starts from zeros.
	_, written = Execute([]Op{{Kind: OpWrite, Block: 3, Offset: 15, Data: []byte{9}}}, s.get)
	want = make([]byte, bs)
	want[15] = 9
	if !bytes.Equal(written[3], want) {
		t.Fatalf("write to missing block = %x", written[3])
	}
}

func TestExecuteAdd(t *testing.T) {
	blk := make([]byte, bs)
	copy(blk[8:], le(41))
	s := store{1: blk}
	out, written := Execute([]Op{{Kind: OpAdd, Block: 1, Offset: 8, Delta: 1}}, s.get)
	if out.Results[0].Value != 42 {
		t.Fatalf("add returned %d, want 42", out.Results[0].Value)
	}
	if got := binary.LittleEndian.Uint64(written[1][8:]); got != 42 {
		t.Fatalf("block holds %d, want 42", got)
	}
	if !bytes.Equal(written[1][:8], make([]byte, 8)) {
		t.Fatal("add touched bytes outside its counter")
	}

	// Wraparound.
	copy(blk[0:], le(^uint64(0)-1))
	out, written = Execute([]Op{{Kind: OpAdd, Block: 1, Delta: 3}}, s.get)
	if out.Results[0].Value != 1 || binary.LittleEndian.Uint64(written[1]) != 1 {
		t.Fatalf("wraparound: returned %d, block %x", out.Results[0].Value, written[1][:8])
	}
	// Little-endian at an unaligned offset.
	out, written = Execute([]Op{{Kind: OpAdd, Block: 2, Offset: 3, Delta: 0x0102}}, s.get)
	if out.Results[0].Value != 0x0102 || written[2][3] != 0x02 || written[2][4] != 0x01 {
		t.Fatalf("unaligned add: %d %x", out.Results[0].Value, written[2])
	}
}

func TestExecuteCas(t *testing.T) {
	s := store{1: seq(0)}
	orig := s.clone()

	// Success: swaps, returns the old bytes.
	out, written := Execute([]Op{{Kind: OpCas, Block: 1, Offset: 2, Expect: []byte{2, 3}, Data: []byte{8, 9}}}, s.get)
	r := out.Results[0]
	if !r.OK || !bytes.Equal(r.Data, []byte{2, 3}) {
		t.Fatalf("cas success: %+v", r)
	}
	want := seq(0)
	want[2], want[3] = 8, 9
	if !bytes.Equal(written[1], want) {
		t.Fatalf("cas wrote %x, want %x", written[1], want)
	}

	// Failure: no swap, returns the old bytes, writes nothing.
	out, written = Execute([]Op{{Kind: OpCas, Block: 1, Offset: 2, Expect: []byte{2, 4}, Data: []byte{8, 9}}}, s.get)
	r = out.Results[0]
	if r.OK || !bytes.Equal(r.Data, []byte{2, 3}) || out.Aborted {
		t.Fatalf("cas failure: %+v", out)
	}
	if len(written) != 0 {
		t.Fatalf("failed cas wrote %x", written)
	}
	if !bytes.Equal(s[1], orig[1]) {
		t.Fatal("Execute modified its input block")
	}
}

func TestExecuteTxnCheck(t *testing.T) {
	s := store{1: seq(0), 2: seq(100)}
	orig := s.clone()
	write := Op{Kind: OpWrite, Block: 2, Data: []byte{7}}

	// A check that holds: the txn applies.
	out, written := Execute([]Op{{Kind: OpCheck, Block: 1, Offset: 1, Expect: []byte{1, 2}}, write}, s.get)
	if out.Aborted || !out.Results[0].OK || len(written) != 1 || written[2][0] != 7 {
		t.Fatalf("check held: %+v %x", out, written)
	}

	// A check that fails: the txn aborts and writes nothing, wherever the
	// check is in the list.
	for _, ops := range [][]Op{
		{{Kind: OpCheck, Block: 1, Offset: 1, Expect: []byte{1, 3}}, write},
		{write, {Kind: OpAdd, Block: 1, Delta: 1}, {Kind: OpCheck, Block: 1, Offset: 8, Expect: []byte{9}}},
	} {
		out, written = Execute(ops, s.get)
		if !out.Aborted || len(out.Results) != 0 || len(written) != 0 {
			t.Errorf("failed check: outcome %+v, written %x; want aborted with nothing written", out, written)
		}
	}
	for k := range orig {
		if !bytes.Equal(s[k], orig[k]) {
			t.Fatal("Execute modified its input blocks")
		}
	}
}

// TestExecuteInOrder: inside one txn, a later op sees the effects of the
// earlier ones, including a check placed after a write.
func TestExecuteInOrder(t *testing.T) {
	s := store{1: seq(0)}
	orig := s.clone()
	out, written := Execute([]Op{
		{Kind: OpWrite, Block: 1, Offset: 0, Data: []byte{0xaa, 0xbb}},
		{Kind: OpRead, Block: 1, Length: 3},
		{Kind: OpXor, Block: 1, Offset: 1, Data: []byte{0xff}},
		{Kind: OpRead, Block: 1, Length: 3},
		{Kind: OpCas, Block: 1, Offset: 0, Expect: []byte{0xaa, 0x44}, Data: []byte{1, 1}},
		{Kind: OpAdd, Block: 1, Offset: 0, Delta: 1},
		{Kind: OpCheck, Block: 1, Offset: 0, Expect: []byte{2, 1}},
		{Kind: OpRead, Block: 1, Length: 2},
		{Kind: OpWrite, Block: 2, Data: []byte{5}},
		{Kind: OpRead, Block: 2, Length: 1},
	}, s.get)
	if out.Aborted {
		t.Fatal("txn aborted: the check did not see the earlier cas and add")
	}
	res := out.Results
	if !bytes.Equal(res[1].Data, []byte{0xaa, 0xbb, 2}) {
		t.Errorf("read after write = %x", res[1].Data)
	}
	if !bytes.Equal(res[3].Data, []byte{0xaa, 0x44, 2}) {
		t.Errorf("read after xor = %x", res[3].Data)
	}
	if !res[4].OK || !bytes.Equal(res[4].Data, []byte{0xaa, 0x44}) {
		t.Errorf("cas after xor = %+v", res[4])
	}
	wantVal := binary.LittleEndian.Uint64([]byte{1, 1, 2, 3, 4, 5, 6, 7}) + 1
	if res[5].Value != wantVal {
		t.Errorf("add after cas = %#x, want %#x", res[5].Value, wantVal)
	}
	if !res[6].OK {
		t.Errorf("check result %+v", res[6])
	}
	if !bytes.Equal(res[7].Data, []byte{2, 1}) || !bytes.Equal(res[9].Data, []byte{5}) {
		t.Errorf("final reads = %x, %x", res[7].Data, res[9].Data)
	}
	if len(written) != 2 || written[1][0] != 2 || written[2][0] != 5 {
		t.Errorf("written = %x", written)
	}
	if !bytes.Equal(s[1], orig[1]) || len(s) != 1 {
		t.Fatal("Execute modified its input blocks")
	}
}

func TestParseKindRoundTrip(t *testing.T) {
	for _, k := range []Kind{OpRead, OpWrite, OpXor, OpAdd, OpCas, OpCheck} {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", k.String(), got, err, k)
		}
	}
	if _, err := ParseKind("frobnicate"); err == nil || !strings.Contains(err.Error(), "frobnicate") {
		t.Errorf("ParseKind of an unknown name: %v", err)
	}
	if _, err := ParseKind(""); err == nil {
		t.Error("ParseKind(\"\") succeeded")
	}
	if s := Kind(99).String(); s != "op(99)" {
		t.Errorf("Kind(99).String() = %q", s)
	}
}

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		in    node.Addr
		role  string
		index int
	}{
		{"data/3", "data", 3},
		{"parity/0", "parity", 0},
		{"client/17", "client", 17},
		{DataAddr(4), "data", 4},
		{WitnessAddr(2), "witness", 2},
	} {
		role, index, err := ParseAddr(tc.in)
		if err != nil || role != tc.role || index != tc.index {
			t.Errorf("ParseAddr(%q) = %q, %d, %v", tc.in, role, index, err)
		}
	}
	for _, bad := range []node.Addr{"data/x", "data/-1", "data", "/3", "", "data/", "reconfig"} {
		if _, _, err := ParseAddr(bad); err == nil {
			t.Errorf("ParseAddr(%q) succeeded", bad)
		}
	}
}

func TestMessageHashesDistinguish(t *testing.T) {
	a := Prepare{Shard: 1, OpNum: 2, Stripe: 3, Delta: []byte{1}}
	b := a
	b.Delta = []byte{2}
	if node.HashOf(a) == node.HashOf(b) {
		t.Error("prepares with different deltas hash alike")
	}
	// Same fields, different message types.
	if node.HashOf(Commit{Shard: 1, OpNum: 2}) == node.HashOf(PrepareDrop{Shard: 1, OpNum: 2}) {
		t.Error("Commit and PrepareDrop with the same fields hash alike")
	}
}
