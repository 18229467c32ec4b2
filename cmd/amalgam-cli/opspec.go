package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/msg"
)

// opJSON is one operation in a txn file (and the fields of an --op spec).
// Data and expected bytes are given as text (data, expect) or hex
// (hex, expect_hex).
type opJSON struct {
	Op        string  `json:"op"`
	Block     *uint64 `json:"block"`
	Offset    int     `json:"offset,omitempty"`
	Length    int     `json:"length,omitempty"`
	Data      *string `json:"data,omitempty"`
	Hex       *string `json:"hex,omitempty"`
	Expect    *string `json:"expect,omitempty"`
	ExpectHex *string `json:"expect_hex,omitempty"`
	Delta     *int64  `json:"delta,omitempty"`
}

// parseOpSpec parses an --op flag: kind:key=value,key=value,... with keys
// block, offset, length, data, hex, expect, expect_hex, delta. Example:
// "write:block=3,offset=8,data=hello". Values may not contain commas; use
// hex or a txn file for arbitrary bytes.
func parseOpSpec(spec string) (msg.Op, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	j := opJSON{Op: kind}
	seen := map[string]bool{}
	if rest != "" {
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return msg.Op{}, fmt.Errorf("--op %q: %q is not key=value", spec, kv)
			}
			k = strings.ReplaceAll(k, "-", "_")
			if seen[k] {
				return msg.Op{}, fmt.Errorf("--op %q: %s given twice", spec, k)
			}
			seen[k] = true
			switch k {
			case "block":
				b, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return msg.Op{}, fmt.Errorf("--op %q: block %q is not a block number", spec, v)
				}
				j.Block = &b
			case "offset", "length":
				n, err := strconv.Atoi(v)
				if err != nil {
					return msg.Op{}, fmt.Errorf("--op %q: %s %q is not a number", spec, k, v)
				}
				if k == "offset" {
					j.Offset = n
				} else {
					j.Length = n
				}
			case "delta":
				d, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					u, uerr := strconv.ParseUint(v, 10, 64)
					if uerr != nil {
						return msg.Op{}, fmt.Errorf("--op %q: delta %q is not a 64-bit integer", spec, v)
					}
					d = int64(u)
				}
				j.Delta = &d
			case "data":
				j.Data = &v
			case "hex":
				j.Hex = &v
			case "expect":
				j.Expect = &v
			case "expect_hex":
				j.ExpectHex = &v
			default:
				return msg.Op{}, fmt.Errorf("--op %q: unknown key %q (want block, offset, length, data, hex, expect, expect_hex, delta)", spec, k)
			}
		}
	}
	op, err := j.toOp()
	if err != nil {
		return msg.Op{}, fmt.Errorf("--op %q: %v", spec, err)
	}
	return op, nil
}

// parseTxnJSON parses a txn file: a JSON array of operations.
func parseTxnJSON(b []byte) ([]msg.Op, error) {
	var js []opJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&js); err != nil {
		return nil, fmt.Errorf("not a JSON array of operations: %v", err)
	}
	ops := make([]msg.Op, len(js))
	for i, j := range js {
		op, err := j.toOp()
		if err != nil {
			return nil, fmt.Errorf("operation %d: %v", i, err)
		}
		ops[i] = op
	}
	return ops, nil
}

func bytesArg(text, hexs *string, name string) ([]byte, error) {
	switch {
	case text != nil && hexs != nil:
		return nil, fmt.Errorf("give %s as text or hex, not both", name)
	case text != nil:
		return []byte(*text), nil
	case hexs != nil:
		b, err := hex.DecodeString(*hexs)
		if err != nil {
			return nil, fmt.Errorf("%s: bad hex: %v", name, err)
		}
		return b, nil
	}
	return nil, nil
}

func (j opJSON) toOp() (msg.Op, error) {
	kind, err := msg.ParseKind(j.Op)
	if err != nil {
		return msg.Op{}, err
	}
	if j.Block == nil {
		return msg.Op{}, fmt.Errorf("%s needs a block", kind)
	}
	data, err := bytesArg(j.Data, j.Hex, "data")
	if err != nil {
		return msg.Op{}, err
	}
	expect, err := bytesArg(j.Expect, j.ExpectHex, "expect")
	if err != nil {
		return msg.Op{}, err
	}
	op := msg.Op{Kind: kind, Block: *j.Block, Offset: j.Offset, Length: j.Length}
	need := func(ok bool, what string) error {
		if !ok {
			return fmt.Errorf("%s needs %s", kind, what)
		}
		return nil
	}
	unexpected := func(bad bool, what string) error {
		if bad {
			return fmt.Errorf("%s takes no %s", kind, what)
		}
		return nil
	}
	var errs []error
	switch kind {
	case msg.OpRead:
		errs = append(errs, unexpected(data != nil, "data"), unexpected(expect != nil, "expect"), unexpected(j.Delta != nil, "delta"))
	case msg.OpWrite, msg.OpXor:
		errs = append(errs, need(len(data) > 0, "data (data= or hex=)"), unexpected(expect != nil, "expect"), unexpected(j.Delta != nil, "delta"), unexpected(j.Length != 0, "length"))
		op.Data = data
	case msg.OpAdd:
		errs = append(errs, need(j.Delta != nil, "delta"), unexpected(data != nil, "data"), unexpected(expect != nil, "expect"), unexpected(j.Length != 0, "length"))
		if j.Delta != nil {
			op.Delta = uint64(*j.Delta)
		}
	case msg.OpCas:
		errs = append(errs, need(len(expect) > 0, "expect (expect= or expect_hex=)"), need(len(data) > 0, "data (data= or hex=)"), unexpected(j.Delta != nil, "delta"), unexpected(j.Length != 0, "length"))
		op.Expect, op.Data = expect, data
	case msg.OpCheck:
		errs = append(errs, need(len(expect) > 0, "expect (expect= or expect_hex=)"), unexpected(data != nil, "data"), unexpected(j.Delta != nil, "delta"), unexpected(j.Length != 0, "length"))
		op.Expect = expect
	}
	for _, e := range errs {
		if e != nil {
			return msg.Op{}, e
		}
	}
	return op, nil
}
