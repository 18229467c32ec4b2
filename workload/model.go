package workload

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/anishathalye/porcupine"
)

// blockState is the model's state: the contents of blocks that differ from
// zero. Step never modifies a state; it builds a new one.
type blockState map[uint64]string

// Model is the sequential specification of the block store for porcupine:
// an input is a transaction ([]msg.Op), an output its msg.Reply, or nil
// for an operation still pending at the end of the history (called, not
// returned: it may take effect at any point after its call, with any
// result). Histories are partitioned by shard, since a transaction never
// spans shards.
func Model(l erasure.Layout) porcupine.Model {
	zero := string(make([]byte, l.BlockSize))
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[int][]porcupine.Operation{}
			for _, op := range h {
				s := shardOf(l, op.Input.([]msg.Op))
				by[s] = append(by[s], op)
			}
			keys := make([]int, 0, len(by))
			for k := range by {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, by[k])
			}
			return out
		},
		Init: func() interface{} { return blockState{} },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			st, ops := state.(blockState), input.([]msg.Op)
			reply, done := output.(msg.Reply) // !done: pending, any result
			shard := shardOf(l, ops)
			owns := func(b uint64) bool { return b < l.NumBlocks() && l.Shard(b) == shard }
			if err := msg.ValidateTxn(ops, l.BlockSize, owns); err != nil {
				return !done || reply.Err != "", st
			}
			if done && reply.Err != "" {
				return false, st
			}
			got, written := msg.Execute(ops, func(b uint64) []byte {
				if v, ok := st[b]; ok {
					return []byte(v)
				}
				return []byte(zero)
			})
			if done && !SameOutcome(got, reply.Outcome) {
				return false, st
			}
			if len(written) == 0 {
				return true, st
			}
			next := make(blockState, len(st)+len(written))
			for k, v := range st {
				next[k] = v
			}
			for b, v := range written {
				if string(v) == zero {
					delete(next, b)
				} else {
					next[b] = string(v)
				}
			}
			return true, next
		},
		Equal: func(a, b interface{}) bool {
			x, y := a.(blockState), b.(blockState)
			if len(x) != len(y) {
				return false
			}
			for k, v := range x {
				if y[k] != v {
					return false
				}
			}
			return true
		},
		DescribeOperation: func(input, output interface{}) string {
			r, ok := output.(msg.Reply)
			if !ok {
				return DescribeTxn(input.([]msg.Op)) + " -> pending"
			}
			return fmt.Sprintf("%s -> %s", DescribeTxn(input.([]msg.Op)), DescribeReply(r))
		},
	}
}

func shardOf(l erasure.Layout, ops []msg.Op) int {
	if len(ops) == 0 || ops[0].Block >= l.NumBlocks() {
		return -1
	}
	return l.Shard(ops[0].Block)
}

// SameOutcome compares two transaction outcomes.
func SameOutcome(a, b msg.Outcome) bool {
	if a.Aborted != b.Aborted || len(a.Results) != len(b.Results) {
		return false
	}
	for i := range a.Results {
		x, y := a.Results[i], b.Results[i]
		if !bytes.Equal(x.Data, y.Data) || x.Value != y.Value || x.OK != y.OK {
			return false
		}
	}
	return true
}

// DescribeTxn renders a transaction for traces and reports.
func DescribeTxn(ops []msg.Op) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = op.String()
	}
	return strings.Join(parts, "; ")
}

// DescribeReply renders a reply for traces and reports.
func DescribeReply(r msg.Reply) string {
	if r.Err != "" {
		return "error: " + r.Err
	}
	if r.Outcome.Aborted {
		return "aborted"
	}
	var b bytes.Buffer
	for i, x := range r.Outcome.Results {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%x/%d/%v", x.Data, x.Value, x.OK)
	}
	return b.String()
}
