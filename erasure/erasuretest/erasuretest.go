// Package erasuretest is test support for code that needs a layout's
// erasure code or a stripe's parity blocks: it fails the test where
// erasure returns an error. Protocol rooms import it from their _test.go
// files only.
package erasuretest

import (
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
)

// Code is the erasure code of l (g data blocks, f parity blocks a stripe).
func Code(t testing.TB, l erasure.Layout) *erasure.Code {
	t.Helper()
	c, err := erasure.NewCode(l.G, l.F)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Parity is the parity blocks of a stripe whose data blocks are data,
// under l's code.
func Parity(t testing.TB, l erasure.Layout, data [][]byte) [][]byte {
	t.Helper()
	par, err := Code(t, l).Encode(data)
	if err != nil {
		t.Fatal(err)
	}
	return par
}
