package data

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// discard is a context that drops every effect but counts the messages.
type discard struct{ msgs int }

func (d *discard) Self() node.Addr                                   { return msg.DataAddr(0) }
func (d *discard) Send(node.Addr, node.Message)                      { d.msgs++ }
func (d *discard) Stream(node.Addr, node.Message)                    { d.msgs++ }
func (d *discard) SetTimer(node.Timer, time.Duration, time.Duration) {}

// BenchmarkWrite4K: a data server (n=5, g=3, f=2, w=0, 4 KiB blocks, 1024
// blocks in the store, memory only) handles whole-block 4 KiB write
// requests through to the PREPAREs it streams: client table, validation,
// execution, delta and block update, one PREPARE per parity server. No
// acks arrive, so pending_ops only grows; commit handling is not measured.
func BenchmarkWrite4K(b *testing.B) {
	const size = 4 << 10
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: (1024 + 2) / 3, BlockSize: size}
	s := New(msg.InitialConfig(l), 0)
	blocks := l.ShardBlocks(0)
	// Two payloads, alternating per round over the shard, so every write
	// changes its block and carries a non-zero delta.
	var payloads [2][]byte
	for p := range payloads {
		payloads[p] = make([]byte, size)
		for i := range payloads[p] {
			payloads[p][i] = byte(i*7 + p + 1)
		}
	}
	ctx := &discard{}
	b.SetBytes(size)
	b.ReportAllocs()
	var seq uint64
	n := uint64(len(blocks))
	for b.Loop() {
		seq++
		s.Handle(ctx, "client/1", msg.Request{Client: 1, Seq: seq, Ops: []msg.Op{
			{Kind: msg.OpWrite, Block: blocks[seq%n], Data: payloads[(seq/n)%2]},
		}})
	}
	if s.NextOpNum() != seq+1 || ctx.msgs != int(seq)*(l.F+l.W) {
		b.Fatalf("op_num %d, %d messages after %d writes", s.NextOpNum(), ctx.msgs, seq)
	}
	b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "ops/s")
}
