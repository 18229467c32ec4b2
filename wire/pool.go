package wire

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// gRPC takes the buffers it encodes messages into and assembles received
// messages in from a pool, and its default pool zeroes each buffer's
// whole capacity on every Get: a 128 KiB block costs a 256 KiB clear on
// each side, a tenth of a durable 128 KiB write's CPU. gRPC reads only
// what it wrote into a buffer from the pool (the encoder appends the
// message from length 0; readers and the write buffer keep count of the
// bytes they put in), so Amalgam's processes use a pool that does not
// zero.
// The price: a gRPC bug that read a buffer past what it wrote would see
// old bytes of this process rather than zeros.
func init() { experimental.SetDefaultBufferPool(&dirtyPool{}) }

// dirtyPool is a mem.BufferPool with a tier per power of two from
// 2^minTier to 2^maxTier bytes; its buffers are not zeroed.
type dirtyPool struct {
	tiers [maxTier - minTier + 1]sync.Pool
}

const (
	minTier = 8
	maxTier = 24
)

var _ mem.BufferPool = (*dirtyPool)(nil)

func (p *dirtyPool) Get(n int) *[]byte {
	t := minTier
	if n > 1<<minTier {
		t = bits.Len(uint(n - 1)) // the smallest power of two >= n
	}
	if t > maxTier {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t-minTier].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<t)
	return &b
}

func (p *dirtyPool) Put(b *[]byte) {
	t := bits.Len(uint(cap(*b))) - 1 // the largest power of two <= cap
	if t < minTier || t > maxTier {
		return
	}
	p.tiers[t-minTier].Put(b)
}
