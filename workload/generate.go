package workload

import (
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// Mix weighs the kinds of transaction Generate draws.
type Mix struct {
	Read, Write, Xor, Add, Cas, Txn int
}

// DefaultMix exercises every kind, with multi-block transactions.
var DefaultMix = Mix{Read: 3, Write: 3, Xor: 1, Add: 2, Cas: 1, Txn: 2}

// Generate draws n transactions over blocks in [0, blocks) of layout l
// using rnd as the only source of randomness. Values are small so that
// compare-and-swap and checks sometimes succeed.
func Generate(rnd func() uint64, l erasure.Layout, blocks uint64, n int, mix Mix) [][]msg.Op {
	if blocks == 0 || blocks > l.NumBlocks() {
		blocks = l.NumBlocks()
	}
	intn := func(k int) int { return int(rnd() % uint64(k)) }
	val := func(size int) []byte {
		b := make([]byte, size)
		v := byte(intn(3))
		for i := range b {
			b[i] = v
		}
		return b
	}
	one := func(kind msg.Kind, b uint64) msg.Op {
		bs := l.BlockSize
		op := msg.Op{Kind: kind, Block: b}
		switch kind {
		case msg.OpRead:
			op.Offset = intn(bs)
			op.Length = intn(bs - op.Offset + 1)
		case msg.OpWrite, msg.OpXor:
			op.Offset = intn(bs)
			op.Data = val(1 + intn(bs-op.Offset))
		case msg.OpAdd:
			op.Offset = 8 * intn(bs/8)
			op.Delta = uint64(1 + intn(5))
		case msg.OpCas, msg.OpCheck:
			op.Offset = intn(bs)
			size := 1 + intn(min(4, bs-op.Offset))
			op.Expect = val(size)
			if kind == msg.OpCas {
				op.Data = val(size)
			}
		}
		return op
	}
	total := mix.Read + mix.Write + mix.Xor + mix.Add + mix.Cas + mix.Txn
	out := make([][]msg.Op, 0, n)
	for len(out) < n {
		b := rnd() % blocks
		r := intn(total)
		switch {
		case r < mix.Read:
			out = append(out, []msg.Op{one(msg.OpRead, b)})
		case r < mix.Read+mix.Write:
			out = append(out, []msg.Op{one(msg.OpWrite, b)})
		case r < mix.Read+mix.Write+mix.Xor:
			out = append(out, []msg.Op{one(msg.OpXor, b)})
		case r < mix.Read+mix.Write+mix.Xor+mix.Add:
			out = append(out, []msg.Op{one(msg.OpAdd, b)})
		case r < total-mix.Txn:
			out = append(out, []msg.Op{one(msg.OpCas, b)})
		default:
			out = append(out, txn(l, b, blocks, intn, one))
		}
	}
	return out
}

// txn builds a transaction over two or three blocks of b's shard: an
// optional check, then writes, adds and reads.
func txn(l erasure.Layout, b, blocks uint64, intn func(int) int, one func(msg.Kind, uint64) msg.Op) []msg.Op {
	var same []uint64
	for _, x := range l.ShardBlocks(l.Shard(b)) {
		if x < blocks {
			same = append(same, x)
		}
	}
	var ops []msg.Op
	if intn(2) == 0 {
		ops = append(ops, one(msg.OpCheck, same[intn(len(same))]))
	}
	kinds := []msg.Kind{msg.OpWrite, msg.OpAdd, msg.OpRead, msg.OpXor}
	for i := 0; i < 2+intn(2); i++ {
		ops = append(ops, one(kinds[intn(len(kinds))], same[intn(len(same))]))
	}
	return ops
}
