package online

import (
	"context"
	"flag"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/runtime"
)

var overheadRounds = flag.Int("overhead-rounds", 0, "TestSnapshotOverhead: A/B round pairs (0: skip)")

// TestSnapshotOverhead measures the throughput of a durable local cluster
// under closed-loop load with snapshots pulled at the default rate
// (Options.Every, 1s; each round joins them into a cut, as Run does)
// against none, alternating A B A B in one run; it reports the median of
// the per-pair ratios and their spread (docs/model-checking.md).
func TestSnapshotOverhead(t *testing.T) {
	if *overheadRounds == 0 {
		t.Skip("-overhead-rounds N measures")
	}
	lc, err := runtime.StartLocal(runtime.LocalOptions{Layout: testLayout, Durability: "durable", DataDir: t.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int64
	wait := startWriters(ctx, t, lc, 16, func(c *client.Client, w int) {
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := c.Add(ctx, uint64(w+i)%testLayout.NumBlocks(), 0, 1); err == nil {
				done.Add(1)
			}
		}
	})
	defer wait()
	defer cancel()
	const round = 4 * time.Second
	every := Options{}.withDefaults().Every
	src := Local(lc.Machines)
	rejected := 0
	var lastErr error
	var held time.Duration
	measure := func(snapshots bool) (float64, int) {
		rctx, stop := context.WithTimeout(ctx, round)
		defer stop()
		cuts := 0
		start, n0 := time.Now(), done.Load()
		if snapshots {
			tk := time.NewTicker(every)
			defer tk.Stop()
			for rctx.Err() == nil {
				snaps, err := src(rctx)
				for _, s := range snaps {
					for _, n := range s.Nodes {
						held = max(held, n.Held)
					}
				}
				if err == nil {
					_, err = NewCut(snaps)
				}
				if err == nil {
					cuts++
				} else if rctx.Err() == nil {
					rejected++
					lastErr = err
				}
				select {
				case <-tk.C:
				case <-rctx.Done():
				}
			}
		} else {
			<-rctx.Done()
		}
		return float64(done.Load()-n0) / time.Since(start).Seconds(), cuts
	}
	measure(false) // warm up
	var ratios []float64
	for i := range *overheadRounds {
		a, cuts := measure(true)
		b, _ := measure(false)
		ratios = append(ratios, a/b)
		t.Logf("round %d: snapshots %.0f ops/s (%d cuts), off %.0f ops/s, ratio %.3f", i+1, a, cuts, b, a/b)
	}
	if rejected > 0 {
		t.Logf("%d rounds not a cut; the last: %v", rejected, lastErr)
	}
	slices.Sort(ratios)
	t.Logf("longest loop hold for a snapshot %v", held)
	t.Logf("median ratio %.3f, spread %.3f..%.3f over %d pairs", ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], len(ratios))
}
