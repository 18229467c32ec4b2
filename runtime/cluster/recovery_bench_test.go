package cluster

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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
	recoveryBench   = e2etest.NewOptIn("recovery-bench", "run the recovery benchmarks (TestRecoveryBench)")
	benchStripes    = flag.Int("recovery-bench-stripes", 2000, "stripes of the benchmark cluster")
	benchClients    = flag.Int("recovery-bench-clients", 8, "concurrent clients")
	benchDuration   = flag.Duration("recovery-bench-duration", 5*time.Second, "how long the normal write throughput is measured")
	benchPause      = flag.Duration("recovery-bench-pause", 0, "rebuild pause between stripes in the rebuild runs (amalgam-server --rebuild-rate)")
	benchWindow     = flag.Int("recovery-bench-window", 0, "stripes the background rebuild keeps in flight (0: runtime.DefaultRebuildWindow)")
	benchAttemptTTL = flag.Duration("recovery-bench-attempt", 2*time.Second, "client attempt timeout (a request for a degraded block is held and answered once the block is rebuilt)")
	benchRun        = flag.Int("recovery-bench-run", 0, "stripes per snapshot run (0: runtime.DefaultRebuildRunBytes of blocks)")
	benchBusyRate   = flag.Float64("recovery-bench-busy-rate", 0, "blocks per second a busy data server's background rebuild keeps to (0: runtime.DefaultRebuildBusyRate; negative: no limit)")
	benchHeldRun    = flag.Int("recovery-bench-held-run", 0, "stripes per snapshot run for a held request (0: as many as a background run)")
	benchBlock      = flag.Int("recovery-bench-block", 4096, "block size in bytes")
	benchDurable    = flag.Bool("recovery-bench-durable", false, "durable mode (pebble under a temporary directory) instead of memory mode")
	benchCompare    = flag.String("recovery-bench-compare", "1,0", "TestRecoveryBench/compare: the run sizes (-recovery-bench-run values) alternated round by round")
	benchRounds     = flag.Int("recovery-bench-rounds", 3, "rounds of TestRecoveryBench/rebuild, rebuilding and compare (medians and spreads over them)")
)

// benchLayout: 6 machines, g=3, f=2, -recovery-bench-block blocks.
func benchLayout() erasure.Layout {
	return erasure.Layout{N: 6, G: 3, F: 2, Stripes: *benchStripes, BlockSize: *benchBlock}
}

// benchMode is the durability mode of the benchmark clusters.
func benchMode() string {
	if *benchDurable {
		return "durable"
	}
	return "memory"
}

// load is clients writing whole blocks, either at random over a set of
// blocks until stopped, or once each over a list (a sweep).
type load struct {
	mu     sync.Mutex
	lats   []time.Duration
	blocks []uint64 // the block of each of lats
	errs   int
	stop   chan struct{}
	wg     sync.WaitGroup
	t0     time.Time
	end    time.Time
}

// run starts n clients; with sweep, client i writes blocks[i], blocks[i+n],
// ... once each and stops; otherwise each writes random blocks until halt.
func run(t *testing.T, lc *Local, n int, blocks []uint64, sweep bool) *load {
	ld := &load{stop: make(chan struct{}), t0: time.Now()}
	buf := make([]byte, lc.Layout.BlockSize)
	for i := range n {
		c := e2etest.DialAttempt(t, lc.Entries, *benchAttemptTTL)
		ld.wg.Go(func() {
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
					ld.blocks = append(ld.blocks, b)
				}
				ld.mu.Unlock()
			}
		})
	}
	return ld
}

// byShard describes the writes i to j-1 (in completion order): how many
// and their mean latency, to shard's blocks and to the others.
func (ld *load) byShard(l erasure.Layout, shard, i, j int) string {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	var n [2]int
	var sum [2]time.Duration
	for k := i; k < j && k < len(ld.lats); k++ {
		o := 0
		if l.Shard(ld.blocks[k]) == shard {
			o = 1
		}
		n[o]++
		sum[o] += ld.lats[k]
	}
	mean := func(o int) time.Duration { return sum[o] / time.Duration(max(n[o], 1)) }
	return fmt.Sprintf("%d to shard %d (mean %v), %d to the others (mean %v)", n[1], shard,
		mean(1).Round(100*time.Microsecond), n[0], mean(0).Round(100*time.Microsecond))
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
	return startRun(t, pause, *benchRun)
}

// startRun starts a benchmark cluster whose servers snapshot run stripes
// per run.
func startRun(t *testing.T, pause time.Duration, run int) *Local {
	t.Helper()
	o := Options{Layout: benchLayout(), Durability: benchMode(), Addr: "127.0.0.1:0", Replicas: 1,
		RaftTick: 50 * time.Millisecond, NoSync: true, RebuildPause: pause, RebuildWindow: *benchWindow, RebuildRun: run, RebuildBusyRate: *benchBusyRate,
		RebuildHeldRun: *benchHeldRun}
	if *benchDurable {
		o.DataDir = t.TempDir()
	}
	return startHealthy(t, o)
}

// normal measures the write throughput of the healthy cluster.
func normal(t *testing.T, lc *Local) *load {
	ld := run(t, lc, *benchClients, allBlocks(lc.Layout), false)
	time.Sleep(*benchDuration)
	t.Logf("normal writes: %v", ld.halt().stats(lc.Layout.BlockSize))
	return ld
}

// replace replaces server in place and returns how long it took until the
// cluster was healthy in configuration num again; replaced, if not nil, is
// called when the reconfiguration service has accepted the replacement.
func replace(t *testing.T, lc *Local, server string, num uint64, replaced func()) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := e2etest.DialAttempt(t, lc.Entries, *benchAttemptTTL)
	defer c.Close()
	start := time.Now()
	if _, err := c.Replace(ctx, server, false); err != nil {
		t.Fatal(err)
	}
	if replaced != nil {
		replaced()
	}
	e2etest.WaitFor(t, server+" rebuilt", 10*time.Minute, func() (bool, string) { return healthy(lc, num) })
	return time.Since(start)
}

func TestRecoveryBench(t *testing.T) {
	recoveryBench.Require(t)
	l := benchLayout()
	shardBlocks := len(l.ShardBlocks(1))
	mb := float64(shardBlocks*l.BlockSize) / 1e6
	t.Logf("layout n=%d g=%d f=%d, %d stripes, %d-byte blocks; a data server holds %d blocks (%.1f MB); %d clients; %s mode",
		l.N, l.G, l.F, l.Stripes, l.BlockSize, shardBlocks, mb, *benchClients, benchMode())

	t.Run("rebuild", func(t *testing.T) { // figures 3.13 and 3.14
		t.Logf("rebuild pause between stripes %v", *benchPause)
		var idleX, loadedX, clientX []float64
		for round := range *benchRounds {
			t.Run(fmt.Sprintf("round%d", round+1), func(t *testing.T) { // its cleanup closes the cluster
				lc := startBench(t, *benchPause)
				first := normal(t, lc)
				d := replace(t, lc, "data/1", 1, nil)
				idle := mb / d.Seconds()
				d, loaded, cw := rebuildLoaded(t, lc, mb)
				base, after := first.stats(l.BlockSize), normal(t, lc).stats(l.BlockSize)
				t.Logf("normal writes after the rebuilds: %.2f x before (not the ratios' denominator: see docs/performance.md)", after.mbs/base.mbs)
				t.Logf("RESULT round %d: rebuild without load: %d blocks: %.2f MB/s = %.2f x normal write throughput", round+1, shardBlocks, idle, idle/base.mbs)
				t.Logf("RESULT round %d: rebuild with %d writing clients: %d blocks in %v: %.2f MB/s = %.2f x normal write throughput; client writes meanwhile %.2f MB/s = %.2f x normal",
					round+1, *benchClients, shardBlocks, d.Round(time.Millisecond), loaded, loaded/base.mbs, cw, cw/base.mbs)
				idleX, loadedX, clientX = append(idleX, idle/base.mbs), append(loadedX, loaded/base.mbs), append(clientX, cw/base.mbs)
			})
		}
		t.Logf("RESULT rebuild (%s mode, %d-byte blocks, %d rounds, median [min-max]): without load %s x normal; with load %s x normal; client writes during the loaded rebuild %s x normal",
			benchMode(), l.BlockSize, len(idleX), medSpread(idleX), medSpread(loadedX), medSpread(clientX))
	})

	t.Run("compare", func(t *testing.T) { compareRuns(t, shardBlocks, mb) })

	t.Run("degraded", func(t *testing.T) { // figure 3.15
		// The background rebuild pauses an hour after its first stripe,
		// so the replaced server stays degraded: each write to one of its
		// blocks first rebuilds that block (a stripe snapshot).
		lc := startBench(t, time.Hour)
		base := normal(t, lc).stats(l.BlockSize)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := e2etest.DialAttempt(t, lc.Entries, *benchAttemptTTL)
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
		// Healthy is measured before the replacement (the ratios'
		// denominator) and again after the rebuild, logged to show the
		// drift; the rounds' medians absorb the shared machine's noise.
		var tput, p99 []float64
		for round := range *benchRounds {
			t.Run(fmt.Sprintf("round%d", round+1), func(t *testing.T) {
				lc := startBench(t, *benchPause)
				c := e2etest.DialAttempt(t, lc.Entries, *benchAttemptTTL)
				defer c.Close()
				shard := func() *load {
					ld := run(t, lc, *benchClients, l.ShardBlocks(1), false)
					time.Sleep(*benchDuration)
					return ld.halt()
				}
				first := shard()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := c.Replace(ctx, "data/1", false); err != nil {
					t.Fatal(err)
				}
				waitReplaced(t, c, lc)
				ld := run(t, lc, *benchClients, l.ShardBlocks(1), false)
				e2etest.WaitFor(t, "data/1 rebuilt", 10*time.Minute, func() (bool, string) {
					num, left := nodeState(c, "data/1")
					return num == 1 && left == 0, fmt.Sprintf("%d degraded blocks", left)
				})
				during := ld.halt().stats(l.BlockSize)
				before, after := first.stats(l.BlockSize), shard().stats(l.BlockSize)
				t.Logf("shard 1 healthy, random writes, before the replacement: %v; after the rebuild: %v (%.2f x before, not the ratios' denominator)",
					before, after, after.opsPerSec/before.opsPerSec)
				t.Logf("RESULT round %d: shard 1 while its replacement rebuilds (%v, random writes): %v = %.2f x healthy throughput; p99 %.2f x healthy p99",
					round+1, ld.end.Sub(ld.t0).Round(time.Millisecond), during, during.opsPerSec/before.opsPerSec, float64(during.p99)/float64(before.p99))
				tput, p99 = append(tput, during.opsPerSec/before.opsPerSec), append(p99, float64(during.p99)/float64(before.p99))
			})
		}
		t.Logf("RESULT shard 1 while its replacement rebuilds (%s mode, %d-byte blocks, %d rounds, median [min-max]): %s x healthy throughput; p99 %s x healthy p99",
			benchMode(), l.BlockSize, len(tput), medSpread(tput), medSpread(p99))
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

// compareRuns alternates clusters whose servers snapshot the
// -recovery-bench-compare run sizes, round by round (A B A B), and
// reports per run size the medians and spreads of the rebuild rates and
// their ratios to the same cluster's normal write throughput.
func compareRuns(t *testing.T, blocks int, mb float64) {
	var runs []int
	for _, f := range strings.Split(*benchCompare, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("-recovery-bench-compare %q: %v", *benchCompare, err)
		}
		runs = append(runs, n)
	}
	type obs struct{ idle, idleX, loaded, loadedX, clientX []float64 }
	res := make([]obs, len(runs))
	l := benchLayout()
	for round := range *benchRounds {
		for i, run := range runs {
			t.Run(fmt.Sprintf("round%d-run%d", round+1, run), func(t *testing.T) { // its cleanup closes the cluster
				lc := startRun(t, *benchPause, run)
				base := normal(t, lc).stats(l.BlockSize)
				d := replace(t, lc, "data/1", 1, nil)
				idle := mb / d.Seconds()
				_, loaded, cw := rebuildLoaded(t, lc, mb)
				r := &res[i]
				r.idle, r.idleX = append(r.idle, idle), append(r.idleX, idle/base.mbs)
				r.loaded, r.loadedX = append(r.loaded, loaded), append(r.loadedX, loaded/base.mbs)
				r.clientX = append(r.clientX, cw/base.mbs)
				t.Logf("round %d, run %d: normal %.2f MB/s; rebuild %d blocks idle %.2f MB/s (%.2f x), loaded %.2f MB/s (%.2f x); client writes during it %.2f x normal",
					round+1, run, base.mbs, blocks, idle, idle/base.mbs, loaded, loaded/base.mbs, cw/base.mbs)
			})
		}
	}
	for i, run := range runs {
		r := res[i]
		t.Logf("RESULT run %d (%s mode, %d-byte blocks, %d rounds): rebuild idle %s MB/s = %s x normal; loaded %s MB/s = %s x normal; client writes during the loaded rebuild %s x normal",
			run, benchMode(), l.BlockSize, len(r.idle), medSpread(r.idle), medSpread(r.idleX), medSpread(r.loaded), medSpread(r.loadedX), medSpread(r.clientX))
	}
}

// rebuildLoaded replaces data/2 (into configuration 2) while the
// benchmark's clients write random blocks, and returns how long it took,
// the rebuild rate of its mb megabytes and the clients' MB/s meanwhile.
func rebuildLoaded(t *testing.T, lc *Local, mb float64) (d time.Duration, rate, clients float64) {
	ld := run(t, lc, *benchClients, allBlocks(lc.Layout), false)
	time.Sleep(time.Second)
	before, start := ld.count(), time.Now()
	var accepted int
	var took time.Duration
	d = replace(t, lc, "data/2", 2, func() { accepted, took = ld.count()-before, time.Since(start) })
	during := ld.count() - before
	ld.halt()
	t.Logf("the replacement was accepted after %v (%d client writes); then %d writes in %v until data/2 was rebuilt; %s",
		took.Round(time.Millisecond), accepted, during-accepted, (d - took).Round(time.Millisecond), ld.byShard(lc.Layout, 2, before, before+during))
	return d, mb / d.Seconds(), float64(during) / d.Seconds() * float64(lc.Layout.BlockSize) / 1e6
}

// medSpread is "median [min-max]" of xs.
func medSpread(xs []float64) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	return fmt.Sprintf("%.2f [%.2f-%.2f]", s[len(s)/2], s[0], s[len(s)-1])
}
