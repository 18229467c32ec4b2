package main

import (
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/msg"
)

func TestParseOpSpec(t *testing.T) {
	good := map[string]msg.Op{
		"read:block=3":                           {Kind: msg.OpRead, Block: 3},
		"read:block=3,offset=2,length=4":         {Kind: msg.OpRead, Block: 3, Offset: 2, Length: 4},
		"write:block=0,data=hi":                  {Kind: msg.OpWrite, Data: []byte("hi")},
		"xor:block=1,hex=ff00,offset=8":          {Kind: msg.OpXor, Block: 1, Offset: 8, Data: []byte{0xff, 0}},
		"add:block=2,offset=8,delta=-1":          {Kind: msg.OpAdd, Block: 2, Offset: 8, Delta: ^uint64(0)},
		"cas:block=2,expect=a,data=b":            {Kind: msg.OpCas, Block: 2, Expect: []byte("a"), Data: []byte("b")},
		"check:block=2,expect-hex=00":            {Kind: msg.OpCheck, Block: 2, Expect: []byte{0}},
		"add:block=2,delta=18446744073709551615": {Kind: msg.OpAdd, Block: 2, Delta: ^uint64(0)},
	}
	for spec, want := range good {
		got, err := parseOpSpec(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		if got.Kind != want.Kind || got.Block != want.Block || got.Offset != want.Offset || got.Length != want.Length ||
			string(got.Data) != string(want.Data) || string(got.Expect) != string(want.Expect) || got.Delta != want.Delta {
			t.Errorf("%q = %+v, want %+v", spec, got, want)
		}
	}
	bad := map[string]string{
		"":                               "unknown op",
		"frob:block=1":                   "unknown op",
		"read":                           "needs a block",
		"read:block=x":                   "not a block number",
		"read:block=1,block=2":           "given twice",
		"read:block=1,nope=2":            "unknown key",
		"read:block=1,data=x":            "takes no data",
		"write:block=1":                  "needs data",
		"write:block=1,data=a,hex=61":    "not both",
		"write:block=1,hex=zz":           "bad hex",
		"add:block=1":                    "needs delta",
		"cas:block=1,data=a":             "needs expect",
		"check:block=1,expect=a,delta=1": "takes no delta",
		"read:block=1,offset":            "not key=value",
	}
	for spec, want := range bad {
		_, err := parseOpSpec(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to mention %q", spec, err, want)
		}
	}
}

func TestParseTxnJSON(t *testing.T) {
	ops, err := parseTxnJSON([]byte(`[{"op":"write","block":0,"data":"v2"},{"op":"add","block":3,"offset":8,"delta":1}]`))
	if err != nil || len(ops) != 2 || ops[1].Delta != 1 || string(ops[0].Data) != "v2" {
		t.Fatalf("got %+v, %v", ops, err)
	}
	for _, bad := range []string{`{}`, `[{"op":"read"}]`, `[{"op":"read","block":1,"bogus":1}]`, `[`} {
		if _, err := parseTxnJSON([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// FuzzParseOpSpec: the --op parser never panics, and what it accepts has a
// known kind and the arguments that kind needs.
func FuzzParseOpSpec(f *testing.F) {
	for _, s := range []string{"read:block=3", "write:block=0,data=hi,offset=4", "cas:block=2,expect=a,data=b",
		"add:block=1,delta=-5", "check:block=1,expect_hex=00ff", "xor:block=1,hex=zz", "read:block=1,block=2", ":", "write:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		op, err := parseOpSpec(spec)
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(spec, "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		switch op.Kind {
		case msg.OpRead:
		case msg.OpWrite, msg.OpXor:
			if len(op.Data) == 0 {
				t.Fatalf("%q: accepted %s without data", spec, op.Kind)
			}
		case msg.OpCas:
			if len(op.Data) == 0 || len(op.Expect) == 0 {
				t.Fatalf("%q: accepted cas without data or expect", spec)
			}
		case msg.OpCheck:
			if len(op.Expect) == 0 {
				t.Fatalf("%q: accepted check without expect", spec)
			}
		case msg.OpAdd:
		default:
			t.Fatalf("%q: accepted kind %v", spec, op.Kind)
		}
	})
}
