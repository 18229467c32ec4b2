package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// writers run clients that each own some blocks and write increasing
// numbers into them; they remember the last acknowledged number per block
// (and the one in flight, which may or may not have taken effect).
type writers struct {
	mu       sync.Mutex
	acked    map[uint64]uint64
	inflight map[uint64]uint64
	ops      atomic.Int64
	errs     atomic.Int64
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startWriters(t *testing.T, lc *Local, n int) *writers {
	w := &writers{acked: map[uint64]uint64{}, inflight: map[uint64]uint64{}, stop: make(chan struct{})}
	l := lc.Layout
	blocks := l.NumBlocks()
	for i := 0; i < n; i++ {
		c := e2etest.DialAttempt(t, lc.Entries, time.Second)
		w.wg.Go(func() {
			defer c.Close()
			for v := uint64(1); ; v++ {
				select {
				case <-w.stop:
					return
				default:
				}
				b := uint64(i) + uint64(n)*(v%uint64((int(blocks)+n-1-i)/n))
				if b >= blocks {
					continue
				}
				buf := binary.LittleEndian.AppendUint64(nil, v)
				w.mu.Lock()
				w.inflight[b] = v
				w.mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
				err := c.Write(ctx, b, 0, buf)
				cancel()
				w.mu.Lock()
				delete(w.inflight, b)
				if err == nil {
					w.acked[b] = v
				}
				w.mu.Unlock()
				if err != nil {
					w.errs.Add(1)
					return // the block's value is unknown from now on; stop this writer
				}
				w.ops.Add(1)
			}
		})
	}
	return w
}

func (w *writers) halt() {
	close(w.stop)
	w.wg.Wait()
}

// check reads every block and compares it with the last acknowledged
// write (a write whose outcome is unknown may also show).
func (w *writers) check(t *testing.T, lc *Local) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
	defer cancel()
	c := e2etest.Dial(t, lc.Entries)
	for b := uint64(0); b < lc.Layout.NumBlocks(); b++ {
		got, err := c.Read(ctx, b, 0, 8)
		if err != nil {
			t.Fatalf("reading block %d: %v", b, err)
		}
		v := binary.LittleEndian.Uint64(got)
		w.mu.Lock()
		want, pend := w.acked[b], w.inflight[b]
		w.mu.Unlock()
		if v != want && (pend == 0 || v != pend) {
			t.Fatalf("block %d holds %d; the last acknowledged write was %d (in flight: %d)", b, v, want, pend)
		}
	}
}

// startHealthy starts a cluster, closed when the test ends, and waits until
// it has a reconfiguration leader and is healthy.
func startHealthy(t *testing.T, o Options) *Local {
	t.Helper()
	lc, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lc.Close)
	e2etest.WaitFor(t, "a leader", safetyStop, func() (bool, string) { return lc.Leader() != nil, "" })
	e2etest.WaitFor(t, "healthy", safetyStop, func() (bool, string) { return healthy(lc, 0) })
	return lc
}

// safetyStop bounds the tests' waits (a leader, a replacement, a rebuild,
// a write) only to turn a hang into a clear failure: on a loaded machine
// they may take longer than any short window.
const safetyStop = 5 * time.Minute

// healthy reports whether the cluster is in configuration num with every
// server on it answering, in that configuration, and rebuilt.
func healthy(lc *Local, num uint64) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, lc.Entries, client.Options{AttemptTimeout: time.Second})
	if err != nil {
		return false, err.Error()
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return false, err.Error()
	}
	want := lc.Layout.N * 2
	if lc.Layout.W > 0 {
		want += lc.Layout.N
	}
	if st.GetConfigNum() != num || len(st.GetNodes()) != want {
		return false, fmt.Sprintf("configuration %d, %d of %d servers answer", st.GetConfigNum(), len(st.GetNodes()), want)
	}
	for _, n := range st.GetNodes() {
		if n.GetConfigNum() != num || n.GetDegradedBlocks() != 0 {
			return false, fmt.Sprintf("%s in configuration %d with %d degraded blocks", n.GetAddr(), n.GetConfigNum(), n.GetDegradedBlocks())
		}
	}
	return true, ""
}

// TestReplaceInProcess runs 3 reconfiguration replicas, 6 machines (g=3,
// f=2, w=1) and a spare in one process, with clients writing throughout:
// a live data server is replaced in place (a new incarnation on the same
// host), a machine is stopped and, suspected, replaced by the spare, which
// rebuilds its blocks; then the reconfiguration leader is stopped and a
// parity server replaced through the new leader. Every acknowledged write
// must survive.
func TestReplaceInProcess(t *testing.T) {
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 8, BlockSize: 64}
	lc := startHealthy(t, Options{Layout: l, Durability: "durable", DataDir: t.TempDir(), Addr: "127.0.0.1:0", Replicas: 3, Spares: 1,
		SuspectAfter: time.Second, RaftTick: 50 * time.Millisecond, NoSync: true})
	w := startWriters(t, lc, 4)
	time.Sleep(500 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
	defer cancel()
	admin := e2etest.Dial(t, lc.Entries)

	// 1. A live data server, replaced in place.
	if _, err := admin.Replace(ctx, "data/1", false); err != nil {
		t.Fatal(err)
	}
	d := e2etest.WaitFor(t, "data/1 replaced and rebuilt", safetyStop, func() (bool, string) { return healthy(lc, 1) })
	t.Logf("data/1 replaced in place and rebuilt in %v (%d writes so far)", d.Round(time.Millisecond), w.ops.Load())

	// 2. Machine 2 stops: suspected, its slot moves to the spare.
	start := time.Now()
	lc.Machines[2].Close()
	lc.Machines[2] = nil
	e2etest.WaitFor(t, "machine 2 moved to the spare", safetyStop, func() (bool, string) {
		h := lc.Leader()
		if h == nil {
			return false, "no leader"
		}
		return h.Directory().GetHosts()[2] == lc.SpareAddrs[0], fmt.Sprint(h.Directory().GetHosts())
	})
	detect := time.Since(start)
	replaced := e2etest.WaitFor(t, "machine 2's servers replaced", safetyStop, func() (bool, string) {
		h := lc.Leader()
		if h == nil {
			return false, "no leader"
		}
		return h.Config().Num == 4 && !h.Busy(), fmt.Sprintf("configuration %d", h.Config().Num)
	})
	rebuilt := e2etest.WaitFor(t, "healthy after the spare rebuilt", safetyStop, func() (bool, string) { return healthy(lc, 4) })
	t.Logf("machine 2 stopped: moved to the spare after %v, replaced %v later, rebuilt %v later (%d writes so far)",
		detect.Round(time.Millisecond), replaced.Round(time.Millisecond), rebuilt.Round(time.Millisecond), w.ops.Load())

	// 3. The reconfiguration leader stops; a parity server is replaced
	// through the new leader.
	old := lc.Leader()
	for i, r := range lc.Replicas {
		if r == old {
			r.Close()
			lc.Replicas[i] = nil
		}
	}
	if _, err := admin.Replace(ctx, "parity/4", false); err != nil {
		t.Fatal(err)
	}
	e2etest.WaitFor(t, "healthy after parity/4 replaced", safetyStop, func() (bool, string) { return healthy(lc, 5) })
	h := lc.Leader()
	hist := h.History()
	if len(hist) != 6 {
		t.Fatalf("history of %d configurations, want 6", len(hist))
	}
	var changed []string
	for _, c := range hist[1:] {
		changed = append(changed, string(c.Changed))
	}
	if fmt.Sprint(changed) != fmt.Sprint([]string{"data/1", "data/2", "parity/2", "witness/2", "parity/4"}) {
		t.Fatalf("configurations replaced %v", changed)
	}
	w.halt()
	if w.errs.Load() > 0 {
		t.Fatalf("%d writes failed", w.errs.Load())
	}
	if w.ops.Load() < 20 {
		t.Fatalf("only %d writes: the test exercised too little", w.ops.Load())
	}
	w.check(t, lc)
	t.Logf("%d writes acknowledged, all blocks as written", w.ops.Load())
}

// TestReplacementPostponedInProcess: on the production runtime, with two
// data servers of every stripe replaced and still rebuilding (the test
// drops their snapshot answers until it has asked for the next
// replacement), the service postpones the replacement of a parity server
// of their stripes (SLC, thesis 3.4.2) and says so to admin replace and
// admin config; once the answers pass, the servers' msg.Rebuilt, carried
// through the Raft log, releases it, and the cluster ends healthy with
// every write made meanwhile intact. A pause between stripes keeps the
// rebuild going while the writers run.
func TestReplacementPostponedInProcess(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 64}
	lc := startHealthy(t, Options{Layout: l, Durability: "durable", DataDir: t.TempDir(), Addr: "127.0.0.1:0",
		RaftTick: 50 * time.Millisecond, NoSync: true, RebuildPause: 500 * time.Millisecond})

	ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
	defer cancel()
	admin := e2etest.Dial(t, lc.Entries)
	// The replacements of data/0 and data/1 stay degraded until release:
	// every snapshot answer to them is dropped (answers may be lost; they
	// ask again). No writes yet: a held request would wait too.
	rebuilding := []node.Addr{"data/0", "data/1"}
	hold := func(on bool) {
		for m, mc := range lc.Machines {
			for _, from := range []node.Addr{msg.DataAddr(m), msg.ParityAddr(m)} {
				for _, to := range rebuilding {
					for _, k := range []string{"SnapshotData", "SnapshotParity"} {
						if on {
							mc.Steer(from, to, k, safetyStop)
						} else {
							mc.Unsteer(from, to, k)
						}
					}
				}
			}
		}
	}
	hold(true)
	for _, s := range rebuilding {
		r, err := admin.Replace(ctx, string(s), false)
		if err != nil || len(r.GetPostponed()) != 0 {
			t.Fatalf("replace %s: %v, postponed %v", s, err, r.GetPostponed())
		}
	}
	e2etest.WaitFor(t, "data/0 and data/1 replaced", safetyStop, func() (bool, string) {
		h := lc.Leader()
		return h != nil && h.Config().Num == 2, ""
	})
	r, err := admin.Replace(ctx, "parity/3", false)
	if err != nil {
		t.Fatal(err)
	}
	if p := r.GetPostponed(); len(p) != 1 || p[0].GetMachine() != 3 || erasure.Role(p[0].GetRole()) != erasure.RoleParity {
		t.Fatalf("parity/3 replacement not postponed: %v (degraded %v)", p, lc.Leader().Degraded())
	}
	h, err := admin.History(ctx)
	if err != nil || len(h.GetPostponed()) != 1 || len(h.GetDegraded()) == 0 {
		t.Fatalf("history: %v, postponed %v, degraded %v", err, h.GetPostponed(), h.GetDegraded())
	}
	hold(false)
	w := startWriters(t, lc, 2)
	d := e2etest.WaitFor(t, "parity/3 replaced", safetyStop, func() (bool, string) {
		h := lc.Leader()
		return h != nil && h.Config().Num == 3, fmt.Sprintf("degraded %v", h.Degraded())
	})
	e2etest.WaitFor(t, "healthy", safetyStop, func() (bool, string) { return healthy(lc, 3) })
	e2etest.WaitFor(t, "no server degraded", safetyStop, func() (bool, string) {
		h := lc.Leader()
		return h != nil && len(h.Degraded()) == 0 && !h.Busy(), fmt.Sprintf("degraded %v", h.Degraded())
	})
	w.halt()
	if w.errs.Load() > 0 {
		t.Fatalf("%d writes failed", w.errs.Load())
	}
	w.check(t, lc)
	t.Logf("parity/3 postponed %v until a data server rebuilt; %d writes acknowledged, all blocks as written",
		d.Round(time.Millisecond), w.ops.Load())
}
