package erasure

import (
	"math/rand/v2"
	"testing"

	"github.com/klauspost/reedsolomon"
)

const benchSize = 128 << 10

func benchBuffers() (delta, parity []byte) {
	rng := rand.New(rand.NewPCG(9, 9))
	delta = make([]byte, benchSize)
	parity = make([]byte, benchSize)
	for i := range delta {
		delta[i] = byte(rng.Uint32())
		parity[i] = byte(rng.Uint32())
	}
	return delta, parity
}

// BenchmarkApplyDelta128K folds a 128 KiB delta into a 128 KiB parity
// block with Code.ApplyDelta, as a parity server does on COMMIT.
func BenchmarkApplyDelta128K(b *testing.B) {
	c := mustCode(b, 3, 2)
	delta, parity := benchBuffers()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		c.ApplyDelta(parity, 1, 2, delta)
	}
}

// BenchmarkRawGalMulSliceXor128K is the library primitive ApplyDelta wraps,
// with the same coefficient and buffers: the ceiling for ApplyDelta.
func BenchmarkRawGalMulSliceXor128K(b *testing.B) {
	c := mustCode(b, 3, 2)
	coef := c.Coefficient(1, 2)
	delta, parity := benchBuffers()
	var ll reedsolomon.LowLevel
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		ll.GalMulSliceXor(coef, delta, parity)
	}
}
