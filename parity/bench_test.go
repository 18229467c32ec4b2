package parity

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// discard is a context that drops every effect.
type discard struct{}

func (discard) Self() node.Addr                                   { return msg.ParityAddr(3) }
func (discard) Send(node.Addr, node.Message)                      {}
func (discard) Stream(node.Addr, node.Message)                    {}
func (discard) SetTimer(node.Timer, time.Duration, time.Duration) {}

// BenchmarkParityCommit128K runs a parity server's full handling of one
// 128 KiB delta: PREPARE (validate, hold, ack), COMMIT (fold coefficient x
// delta into the parity block) and PREPARE-DROP. Besides the Galois-field
// work it measures the prepares bookkeeping: the set copies each Held entry
// and re-hashes the whole PREPARE, delta included, whenever an entry is
// added, marked applied or removed. Compare with erasure's
// BenchmarkApplyDelta128K from the same run to see that overhead.
func BenchmarkParityCommit128K(b *testing.B) {
	const size = 128 << 10
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 5, BlockSize: size}
	code, err := erasure.NewCode(l.G, l.F)
	if err != nil {
		b.Fatal(err)
	}
	s := New(msg.InitialConfig(l), 3, code) // parity 0 of stripe 0
	rng := rand.New(rand.NewPCG(1, 2))
	delta := make([]byte, size)
	for i := range delta {
		delta[i] = byte(rng.Uint32())
	}
	p := msg.Prepare{Shard: 1, Primary: 1, Stripe: 0, Pos: 1, Delta: delta, Stripes: []int{0}, Client: 1}
	from := msg.DataAddr(1)
	ctx := discard{}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		p.OpNum++
		p.Seq = p.OpNum
		s.Handle(ctx, from, p)
		s.Handle(ctx, from, msg.Commit{Shard: 1, Primary: 1, OpNum: p.OpNum, Stripe: 0})
		s.Handle(ctx, from, msg.PrepareDrop{Shard: 1, Primary: 1, OpNum: p.OpNum, Stripe: 0})
	}
	if len(s.Prepares()) != 0 || s.OpNum(1) != p.OpNum {
		b.Fatalf("server held %d prepares, op num %d", len(s.Prepares()), s.OpNum(1))
	}
}
