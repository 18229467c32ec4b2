package faults_test

import (
	"context"
	"time"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

// opTimeout is how long a client operation may take before it is recorded
// as pending.
const opTimeout = 20 * time.Second

// newLoad runs concurrent clients on the cluster that record every
// operation (e2etest.Load): mixed transactions on blocks [0, 18), and
// every fourth one a counter written to the worker's own ledger block.
func newLoad(c *cluster, seed uint64, workers int) *e2etest.Load {
	ld := &e2etest.Load{T: c.t, Entries: c.entries, Layout: c.l, Seed: seed, Workers: workers, Shared: 18, Timeout: opTimeout}
	ld.Start()
	return ld
}

// finish stops the clients, reads every block (the final reads join the
// history) and returns the acknowledged ledger writes that were lost.
func finish(ld *e2etest.Load) (lost int) {
	ctx, cancel := context.WithTimeout(context.Background(), e2etest.SafetyStop)
	defer cancel()
	lost, _ = ld.FinalReads(ctx, uint64(ld.Shared+ld.Workers), 2*opTimeout)
	return lost
}

// neverCompleted counts the operations that never returned although they
// started after a fault healed and their time ran out before the next
// fault (windows lists [healed, next fault] windows).
func neverCompleted(ld *e2etest.Load, windows [][2]time.Time) int {
	n := 0
	for _, call := range ld.Failed() {
		at := ld.Began().Add(time.Duration(call))
		for _, w := range windows {
			if !at.Before(w[0]) && at.Add(ld.Timeout).Before(w[1]) {
				n++
				break
			}
		}
	}
	return n
}
