package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// Seeds 86 and 426 of the rebuild-pause runs once ended with a server
// waiting for a rebuild timer it never set: its "timer pending" flag was
// not hashed, so a handler result cached for the same server without a
// pending timer was reused.
func TestRebuildPauseFlagHashed(t *testing.T) {
	for _, seed := range []int{86, 426} {
		if _, err := pauseSeed(seed).try(); err != nil {
			t.Errorf("%.400s", err)
		}
	}
}

// Seed 438 of the parity replacement runs (beyond the 150 that
// TestRandomizedReplaceParity runs) once decoded a stripe from a data
// server's old snapshot answer and parity copies taken at its re-sent
// marker, after a later PREPARE: a re-asked snapshot mixed two cuts. A
// stalled rebuild now starts a new round under a new nonce
// (recovery.Rebuild.Retry).
func TestSnapshotRetryNewRound(t *testing.T) {
	seed := 438
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 16}
	rs := []msg.Replace{{Role: erasure.RoleParity, Machine: seed % l.N, Inc: 1}, {Role: erasure.RoleData, Machine: (seed + 2) % l.N, Inc: 1}}
	r := replaceRun{layout: l, clients: 3, ops: 30, loss: 0.05, dup: 0.05, seed: uint64(seed), replace: rs, crash: true}
	if _, err := r.try(); err != nil {
		t.Fatalf("%.400s", err)
	}
}
