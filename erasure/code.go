package erasure

import (
	"bytes"
	"crypto/subtle"
	"fmt"

	"github.com/klauspost/reedsolomon"
)

// Code is a systematic (g+f, g) Reed-Solomon code over GF(2^8) from
// klauspost/reedsolomon. Parity block k of a stripe is
// sum_i Coefficient(k, i) * data_i, so a change delta to data position i
// moves parity k by Coefficient(k, i) * delta (thesis 2.3).
type Code struct {
	g, f int
	enc  reedsolomon.Encoder
	coef [][]byte // coef[k][i]
	ll   reedsolomon.LowLevel
}

// NewCode builds the code and reads its coefficients from the library by
// encoding unit vectors, then checks them against a full encode.
func NewCode(g, f int) (*Code, error) {
	if g < 1 || f < 1 || g+f > 256 {
		return nil, fmt.Errorf("erasure: bad code (g=%d, f=%d)", g, f)
	}
	enc, err := reedsolomon.New(g, f, reedsolomon.WithMaxGoroutines(1))
	if err != nil {
		return nil, fmt.Errorf("erasure: %w", err)
	}
	c := &Code{g: g, f: f, enc: enc, coef: make([][]byte, f)}
	for k := range c.coef {
		c.coef[k] = make([]byte, g)
	}
	for i := 0; i < g; i++ {
		par := make([][]byte, f)
		for k := range par {
			par[k] = make([]byte, 1)
		}
		if err := enc.EncodeIdx([]byte{1}, i, par); err != nil {
			return nil, fmt.Errorf("erasure: probing coefficients: %w", err)
		}
		for k := range par {
			c.coef[k][i] = par[k][0]
		}
	}
	if err := c.selfCheck(); err != nil {
		return nil, err
	}
	return c, nil
}

// selfCheck verifies that folding deltas with the probed coefficients gives
// the same parity as the library's Encode.
func (c *Code) selfCheck() error {
	const size = 64
	data := make([][]byte, c.g)
	for i := range data {
		data[i] = make([]byte, size)
		for j := range data[i] {
			data[i][j] = byte(i*131 + j*7 + 1)
		}
	}
	want, err := c.Encode(data)
	if err != nil {
		return err
	}
	for k := 0; k < c.f; k++ {
		got := make([]byte, size)
		for i := range data {
			c.ApplyDelta(got, k, i, data[i])
		}
		if !bytes.Equal(got, want[k]) {
			return fmt.Errorf("erasure: coefficient self-check failed for parity %d", k)
		}
	}
	return nil
}

// G is the number of data blocks per stripe.
func (c *Code) G() int { return c.g }

// F is the number of parity blocks per stripe.
func (c *Code) F() int { return c.f }

// Coefficient is the factor of data position i in parity block k.
func (c *Code) Coefficient(k, i int) byte { return c.coef[k][i] }

// ApplyDelta folds the change delta at data position i into parity block k
// in place: parity ^= Coefficient(k, i) * delta.
func (c *Code) ApplyDelta(parity []byte, k, i int, delta []byte) {
	c.ll.GalMulSliceXor(c.coef[k][i], delta, parity)
}

// Encode returns the f parity blocks of the g data blocks.
func (c *Code) Encode(data [][]byte) ([][]byte, error) {
	if len(data) != c.g {
		return nil, fmt.Errorf("erasure: encode wants %d data blocks, got %d", c.g, len(data))
	}
	shards := make([][]byte, c.g+c.f)
	copy(shards, data)
	for k := 0; k < c.f; k++ {
		shards[c.g+k] = make([]byte, len(data[0]))
	}
	if err := c.enc.Encode(shards); err != nil {
		return nil, fmt.Errorf("erasure: %w", err)
	}
	return shards[c.g:], nil
}

// ReconstructData fills in the missing (nil) data blocks of a stripe given
// as g data blocks followed by f parity blocks. At least g blocks must be
// present. Present blocks are not modified.
func (c *Code) ReconstructData(shards [][]byte) error {
	if len(shards) != c.g+c.f {
		return fmt.Errorf("erasure: stripe wants %d blocks, got %d", c.g+c.f, len(shards))
	}
	required := make([]bool, len(shards))
	for i := 0; i < c.g; i++ {
		required[i] = shards[i] == nil
	}
	if err := c.enc.ReconstructSome(shards, required); err != nil {
		return fmt.Errorf("erasure: %w", err)
	}
	return nil
}

// Delta returns old XOR new: the change that turns old into new.
func Delta(old, new []byte) []byte {
	out := make([]byte, len(old))
	subtle.XORBytes(out, old, new)
	return out
}

// XORInto sets dst ^= src.
func XORInto(dst, src []byte) { subtle.XORBytes(dst, dst, src) }
