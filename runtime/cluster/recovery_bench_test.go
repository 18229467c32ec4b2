package cluster

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
)

// The recovery benchmarks of docs/performance.md ("Recovery"), after the
// thesis' figures 3.13 to 3.15. They run an in-process cluster in memory
// mode and take tens of seconds, so they run only with -recovery-bench:
//
//	go test -p 1 -run TestRecoveryBench -recovery-bench -v ./runtime/cluster/
var (
	recoveryBench   = flag.Bool("recovery-bench", false, "run the recovery benchmarks (TestRecoveryBench)")
	benchStripes    = flag.Int("recovery-bench-stripes", 2000, "stripes of the benchmark cluster")
	benchClients    = flag.Int("recovery-bench-clients", 8, "concurrent clients")
	benchDuration   = flag.Duration("recovery-bench-duration", 5*time.Second, "how long the normal write throughput is measured")
	benchPause      = flag.Duration("recovery-bench-pause", 0, "rebuild pause between stripes in the rebuild runs (amalgam-server --rebuild-rate)")
	benchWindow     = flag.Int("recovery-bench-window", 0, "stripes the background rebuild keeps in flight (0: runtime.DefaultRebuildWindow)")
	benchAttemptTTL = flag.Duration("recovery-bench-attempt", 2*time.Second, "client attempt timeout (a request for a degraded block is held and answered once the block is rebuilt)")
)

// benchLayout: 6 machines, g=3, f=2, 4 KiB blocks.
func benchLayout() erasure.Layout {
	return erasure.Layout{N: 6, G: 3, F: 2, Stripes: *benchStripes, BlockSize: 4096}
}

// load is clients writing whole blocks, either at random over a set of
// blocks until stopped, or once each over a list (a sweep).
type load struct {
	mu   sync.Mutex
	lats []time.Duration
	errs int
	stop chan struct{}
	wg   sync.WaitGroup
	t0   time.Time
	end  time.Time
}

func dialBench(t *testing.T, lc *Local) *client.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, lc.Entries, client.Options{AttemptTimeout: *benchAttemptTTL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run starts n clients; with sweep, client i writes blocks[i], blocks[i+n],
// ... once each and stops; otherwise each writes random blocks until halt.
func run(t *testing.T, lc *Local, n int, blocks []uint64, sweep bool) *load {
	ld := &load{stop: make(chan struct{}), t0: time.Now()}
	buf := make([]byte, lc.Layout.BlockSize)
	for i := range n {
		c := dialBench(t, lc)
		ld.wg.Add(1)
		go func() {
			defer ld.wg.Done()
			defer c.Close()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for k := 0; ; k++ {
				var b uint64
				if sweep {
					if i+k*n >= len(blocks) {
						return
					}
					b = blocks[i+k*n]
				} else {
					select {
					case <-ld.stop:
						return
					default:
					}
					b = blocks[r.IntN(len(blocks))]
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				start := time.Now()
				err := c.Write(ctx, b, 0, buf)
				d := time.Since(start)
				cancel()
				ld.mu.Lock()
				if err != nil {
					ld.errs++
				} else {
					ld.lats = append(ld.lats, d)
				}
				ld.mu.Unlock()
			}
		}()
	}
	return ld
}

func (ld *load) halt() *load {
	close(ld.stop)
	return ld.wait()
}

func (ld *load) wait() *load {
	ld.wg.Wait()
	ld.end = time.Now()
	return ld
}

// count is the writes acknowledged so far.
func (ld *load) count() int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return len(ld.lats)
}

type stats struct {
	ops            int
	opsPerSec, mbs float64
	mean, p50, p99 time.Duration
}

func (ld *load) stats(blockSize int) stats {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	s := stats{ops: len(ld.lats)}
	if s.ops == 0 {
		return s
	}
	l := slices.Clone(ld.lats)
	slices.Sort(l)
	var sum time.Duration
	for _, d := range l {
		sum += d
	}
	s.mean = sum / time.Duration(len(l))
	s.p50, s.p99 = l[len(l)/2], l[len(l)*99/100]
	s.opsPerSec = float64(s.ops) / ld.end.Sub(ld.t0).Seconds()
	s.mbs = s.opsPerSec * float64(blockSize) / 1e6
	return s
}

func (s stats) String() string {
	return fmt.Sprintf("%d writes, %.0f writes/s (%.2f MB/s), latency mean %v p50 %v p99 %v", s.ops, s.opsPerSec, s.mbs,
		s.mean.Round(10*time.Microsecond), s.p50.Round(10*time.Microsecond), s.p99.Round(10*time.Microsecond))
}

func allBlocks(l erasure.Layout) []uint64 {
	out := make([]uint64, l.NumBlocks())
	for i := range out {
		out[i] = uint64(i)
	}
	return out
}

func startBench(t *testing.T, pause time.Duration) *Local {
	t.Helper()
	return startHealthy(t, Options{Layout: benchLayout(), Durability: "memory", Addr: "127.0.0.1:0", Replicas: 1,
		RaftTick: 50 * time.Millisecond, NoSync: true, RebuildPause: pause, RebuildWindow: *benchWindow})
}

// normal measures the write throughput of the healthy cluster.
func normal(t *testing.T, lc *Local) stats {
	ld := run(t, lc, *benchClients, allBlocks(lc.Layout), false)
	time.Sleep(*benchDuration)
	s := ld.halt().stats(lc.Layout.BlockSize)
	t.Logf("normal writes: %v", s)
	return s
}

// replace replaces server in place and returns how long it took until the
// cluster was healthy in configuration num again.
func replace(t *testing.T, lc *Local, server string, num uint64) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialBench(t, lc)
	defer c.Close()
	start := time.Now()
	if _, err := c.Replace(ctx, server, false); err != nil {
		t.Fatal(err)
	}
	e2etest.WaitFor(t, server+" rebuilt", 10*time.Minute, func() (bool, string) { return healthy(lc, num) })
	return time.Since(start)
}

func TestRecoveryBench(t *testing.T) {
	if !*recoveryBench {
		t.Skip("run with -recovery-bench")
	}
	l := benchLayout()
	shardBlocks := len(l.ShardBlocks(1))
	mb := float64(shardBlocks*l.BlockSize) / 1e6
	t.Logf("layout n=%d g=%d f=%d, %d stripes, %d-byte blocks; a data server holds %d blocks (%.1f MB); %d clients; memory mode",
		l.N, l.G, l.F, l.Stripes, l.BlockSize, shardBlocks, mb, *benchClients)

	t.Run("rebuild", func(t *testing.T) { // figures 3.13 and 3.14
		lc := startBench(t, *benchPause)
		t.Logf("rebuild pause between stripes %v", *benchPause)
		base := normal(t, lc)

		d := replace(t, lc, "data/1", 1)
		idle := mb / d.Seconds()
		t.Logf("RESULT rebuild without load: %d blocks in %v: %.2f MB/s = %.2f x normal write throughput",
			shardBlocks, d.Round(time.Millisecond), idle, idle/base.mbs)

		ld := run(t, lc, *benchClients, allBlocks(l), false)
		time.Sleep(time.Second)
		before := ld.count()
		d = replace(t, lc, "data/2", 2)
		during := ld.count() - before
		ld.halt()
		loaded := mb / d.Seconds()
		cw := float64(during) / d.Seconds() * float64(l.BlockSize) / 1e6
		t.Logf("RESULT rebuild with %d writing clients: %d blocks in %v: %.2f MB/s = %.2f x normal write throughput; client writes meanwhile %.2f MB/s = %.2f x normal",
			*benchClients, shardBlocks, d.Round(time.Millisecond), loaded, loaded/base.mbs, cw, cw/base.mbs)
	})

	t.Run("degraded", func(t *testing.T) { // figure 3.15
		// The background rebuild pauses an hour after its first stripe,
		// so the replaced server stays degraded: each write to one of its
		// blocks first rebuilds that block (a stripe snapshot).
		lc := startBench(t, time.Hour)
		base := normal(t, lc)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := dialBench(t, lc)
		defer c.Close()
		if _, err := c.Replace(ctx, "data/1", false); err != nil {
			t.Fatal(err)
		}
		waitReplaced(t, c, lc)
		healthyShard := run(t, lc, *benchClients, l.ShardBlocks(0), true).wait().stats(l.BlockSize)
		t.Logf("RESULT healthy data server (shard 0, each block once): %v = %.2f x normal throughput",
			healthyShard, healthyShard.opsPerSec/base.opsPerSec)
		degr := run(t, lc, *benchClients, l.ShardBlocks(1), true).wait().stats(l.BlockSize)
		t.Logf("RESULT degraded data server (shard 1, each block once, rebuilt on demand): %v = %.2f x normal throughput, %.2f x the healthy server; p99 %.2f x the healthy server's",
			degr, degr.opsPerSec/base.opsPerSec, degr.opsPerSec/healthyShard.opsPerSec, float64(degr.p99)/float64(healthyShard.p99))
		if _, left := nodeState(c, "data/1"); left >= 0 {
			t.Logf("data/1 still has %d degraded blocks (expected 0: every block was written)", left)
		}
	})

	t.Run("rebuilding", func(t *testing.T) {
		// Clients write random blocks of shard 1 before and while its
		// replacement rebuilds in the background (at --recovery-bench-pause):
		// requests for blocks not rebuilt yet are held and jump the queue.
		lc := startBench(t, *benchPause)
		c := dialBench(t, lc)
		defer c.Close()
		ld := run(t, lc, *benchClients, l.ShardBlocks(1), false)
		time.Sleep(*benchDuration)
		before := ld.halt().stats(l.BlockSize)
		t.Logf("shard 1 healthy, random writes: %v", before)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.Replace(ctx, "data/1", false); err != nil {
			t.Fatal(err)
		}
		waitReplaced(t, c, lc)
		ld = run(t, lc, *benchClients, l.ShardBlocks(1), false)
		e2etest.WaitFor(t, "data/1 rebuilt", 10*time.Minute, func() (bool, string) {
			num, left := nodeState(c, "data/1")
			return num == 1 && left == 0, fmt.Sprintf("%d degraded blocks", left)
		})
		during := ld.halt().stats(l.BlockSize)
		t.Logf("RESULT shard 1 while its replacement rebuilds (%v, random writes): %v = %.2f x healthy throughput; p99 %.2f x healthy p99",
			ld.end.Sub(ld.t0).Round(time.Millisecond), during, during.opsPerSec/before.opsPerSec, float64(during.p99)/float64(before.p99))
	})
}

// waitReplaced waits until every server is in configuration 1 and data/1
// still has blocks to rebuild. Requests that reach data/1 earlier wait
// longer: a snapshot request reaching a server still in configuration 0 is
// ignored, and the rebuild asks again after its retry period (50-100 ms,
// doubling while nobody answers).
func waitReplaced(t *testing.T, c *client.Client, lc *Local) {
	e2etest.WaitFor(t, "data/1 replaced", 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		if len(st.GetNodes()) != 2*lc.Layout.N {
			return false, fmt.Sprintf("%d servers answer", len(st.GetNodes()))
		}
		for _, n := range st.GetNodes() {
			if n.GetConfigNum() != 1 {
				return false, fmt.Sprintf("%s in configuration %d", n.GetAddr(), n.GetConfigNum())
			}
		}
		_, left := nodeState(c, "data/1")
		return left > 0, "data/1 rebuilt already"
	})
}

// nodeState is server addr's configuration number and degraded blocks (-1
// if it does not answer).
func nodeState(c *client.Client, addr string) (uint64, int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return 0, -1
	}
	for _, n := range st.GetNodes() {
		if n.GetAddr() == addr {
			return n.GetConfigNum(), n.GetDegradedBlocks()
		}
	}
	return 0, -1
}
