// Package reconfig_test drives a cluster of separate amalgam-server
// processes through machine failures that the reconfiguration service
// repairs with spares (docs/reconfiguration.md, "End to end").
package reconfig_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
)

var bin string

func TestMain(m *testing.M) { e2etest.Main(m, &bin, true, "amalgam-server", "amalgam-cli") }

func start(t *testing.T, name, ready string, args ...string) *e2etest.Proc {
	t.Helper()
	return e2etest.StartProc(t, name, ready, append([]string{filepath.Join(bin, "amalgam-server")}, args...)...)
}

// TestReplaceMachines runs a 3-replica reconfiguration service, 6 machines
// (g=3, f=2) and a spare as separate processes, with clients running mixed
// operations throughout. One machine is killed (SIGKILL): the service
// suspects it, moves its slot to the spare and replaces its servers, which
// rebuild; status returns to healthy. The killed machine's host rejoins as
// a spare; then the reconfiguration leader and a second machine are
// killed: the cluster recovers again. No acknowledged write may be lost
// and the history, final reads included, must be linearizable.
func TestReplaceMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process replacement test: about a minute")
	}
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 0, Stripes: 12, BlockSize: 64}
	const (
		workers   = 6
		shared    = 18 // the mixed workload runs on blocks [0, shared)
		opTimeout = 30 * time.Second
	)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	victim1 := rng.IntN(l.N)
	victim2 := (victim1 + 1 + rng.IntN(l.N-1)) % l.N
	t.Logf("seed %d: killing machine %d, then the reconfiguration leader and machine %d", seed, victim1, victim2)

	dir := t.TempDir()
	addrs := e2etest.FreeAddrs(t, "127.0.0.1", 3+l.N+1)
	reps, machines, spareAddr := addrs[:3], addrs[3:3+l.N], addrs[3+l.N]
	entries := strings.Join(reps, ",")
	var procs []*e2etest.Proc
	logs := func() string {
		var b strings.Builder
		for _, p := range procs {
			b.WriteString(p.Out.String())
		}
		return b.String()
	}
	defer func() {
		if t.Failed() || *e2etest.KeepLogs {
			t.Logf("process output:\n%s", logs())
		}
	}()
	repProc := map[string]*e2etest.Proc{}
	for i, a := range reps {
		var peers []string
		for j, b := range reps {
			if j != i {
				peers = append(peers, fmt.Sprintf("%d=%s", j+1, b))
			}
		}
		p := start(t, fmt.Sprintf("reconfig %d", i+1), "reconfiguration service",
			"reconfig", "--id", fmt.Sprint(i+1), "--peers", strings.Join(peers, ","), "--addr", a,
			"--data-dir", filepath.Join(dir, fmt.Sprintf("reconfig-%d", i+1)), "--machine-addrs", strings.Join(machines, ","),
			"--g", fmt.Sprint(l.G), "--f", fmt.Sprint(l.F), "--w", fmt.Sprint(l.W), "--block-size", fmt.Sprint(l.BlockSize),
			"--blocks", fmt.Sprint(l.NumBlocks()), "--suspect-after", "1500ms")
		procs = append(procs, p)
		repProc[a] = p
	}
	nodeProc := map[int]*e2etest.Proc{}
	for m, a := range machines {
		p := start(t, fmt.Sprintf("node %d", m), "serving at", "node", "--machine", fmt.Sprint(m), "--addr", a,
			"--reconfig", entries, "--data-dir", filepath.Join(dir, fmt.Sprintf("node-%d", m)))
		procs = append(procs, p)
		nodeProc[m] = p
	}
	procs = append(procs, start(t, "spare", "spare serving at", "node", "--spare", "--addr", spareAddr,
		"--reconfig", entries, "--data-dir", filepath.Join(dir, "spare")))

	ctx := context.Background()
	admin := e2etest.Dial(t, entries)

	// Clients, as in e2e/kill_test.go (e2etest.Load): mixed transactions on shared blocks,
	// and every fourth one a counter written into the worker's ledger block.
	ld := &e2etest.Load{T: t, Entries: entries, Layout: l, Seed: seed, Workers: workers, Shared: shared, Timeout: opTimeout}
	ld.Start()
	defer ld.Stop()

	history1 := func() ([]string, uint64, bool, string, []string, error) { return clusterHistory(admin) }
	healthy := func(num uint64) (bool, string) { return clusterHealthy(entries, num) }
	recover := func(victim int, spare string, num uint64) (detect, replace, rebuild time.Duration) {
		killed := time.Now()
		detect = e2etest.WaitFor(t, fmt.Sprintf("machine %d moved to the spare", victim), e2etest.SafetyStop, func() (bool, string) {
			hosts, _, _, _, _, err := history1()
			if err != nil {
				return false, err.Error()
			}
			return hosts[victim] == spare, fmt.Sprint(hosts)
		})
		replace = e2etest.WaitFor(t, fmt.Sprintf("machine %d's servers replaced", victim), e2etest.SafetyStop, func() (bool, string) {
			_, n, busy, _, _, err := history1()
			if err != nil {
				return false, err.Error()
			}
			return n == num && !busy, fmt.Sprintf("configuration %d, busy %v", n, busy)
		})
		rebuild = e2etest.WaitFor(t, "healthy again", e2etest.SafetyStop, func() (bool, string) { return healthy(num) })
		t.Logf("machine %d killed: detected and moved to the spare in %v, servers replaced %v later, rebuilt and healthy %v later (%v in all)",
			victim, detect.Round(time.Millisecond), replace.Round(time.Millisecond), rebuild.Round(time.Millisecond),
			time.Since(killed).Round(time.Millisecond))
		return
	}

	e2etest.WaitFor(t, "healthy at first", e2etest.SafetyStop, func() (bool, string) { return healthy(0) })
	time.Sleep(2 * time.Second)

	// 1. SIGKILL a machine.
	nodeProc[victim1].Kill()
	t.Logf("killed machine %d at %s", victim1, machines[victim1])
	recover(victim1, spareAddr, 2)

	// 2. Its host rejoins as a spare, with an empty data directory.
	procs = append(procs, start(t, "rejoined spare", "spare serving at", "node", "--spare", "--addr", machines[victim1],
		"--reconfig", entries, "--data-dir", filepath.Join(dir, "rejoined")))
	e2etest.WaitFor(t, "the rejoined spare registered", e2etest.SafetyStop, func() (bool, string) {
		_, _, _, _, spares, err := history1()
		if err != nil {
			return false, err.Error()
		}
		return len(spares) == 1 && spares[0] == machines[victim1], fmt.Sprint(spares)
	})
	time.Sleep(time.Second)

	// 3. Kill the reconfiguration leader and a second machine.
	_, _, _, leader, _, err := history1()
	if err != nil || repProc[leader] == nil {
		t.Fatalf("no leader known (%q, %v)", leader, err)
	}
	repProc[leader].Kill()
	victimHost := machines[victim2]
	if victim2 == victim1 {
		t.Fatal("victims collide")
	}
	nodeProc[victim2].Kill()
	t.Logf("killed the reconfiguration leader at %s and machine %d at %s", leader, victim2, victimHost)
	recover(victim2, machines[victim1], 4)
	// Enough work for the check, counted, not timed.
	const minAcked = 50
	e2etest.WaitFor(t, fmt.Sprintf("%d acknowledged writes", minAcked), e2etest.SafetyStop, func() (bool, string) {
		return ld.Acked() >= minAcked, fmt.Sprintf("%d acknowledged", ld.Acked())
	})
	time.Sleep(2 * time.Second)

	ld.Stop()
	if t.Failed() {
		return
	}

	// Final reads of every block, in the history too.
	fctx, cancel := context.WithTimeout(ctx, e2etest.SafetyStop)
	defer cancel()
	ld.FinalReads(fctx, uint64(shared+workers), opTimeout)
	if acked := ld.Acked(); acked < minAcked {
		t.Fatalf("only %d acknowledged writes: the test exercised too little", acked)
	}
	v, viz := ld.Check("replace")
	t.Log(v)
	if p := v.Problem(); p != "" {
		t.Fatalf("%s (%d pending); visualization in %s", p, ld.Pending(), viz)
	}
	t.Logf("%d operations (%d acknowledged writes, %d pending at the end), linearizable; no acknowledged write lost", v.Ops, ld.Acked(), ld.Pending())
}

// clusterHealthy asks amalgam-cli, as an operator would, whether the
// cluster at entries is healthy in configuration num.
func clusterHealthy(entries string, num uint64) (bool, string) {
	out, err := exec.Command(filepath.Join(bin, "amalgam-cli"), "--cluster", entries, "--output", "json", "--timeout", "5s", "status").CombinedOutput()
	if err != nil {
		return false, strings.TrimSpace(string(out))
	}
	var st struct {
		ConfigNum uint64 `json:"config_num"`
		Healthy   bool   `json:"healthy"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return false, err.Error()
	}
	return st.Healthy && st.ConfigNum == num, fmt.Sprintf("configuration %d, healthy %v", st.ConfigNum, st.Healthy)
}

// clusterHistory asks the reconfiguration service for the machines' hosts,
// the newest configuration's number, whether it is still replacing, the
// leading replica and the spares.
func clusterHistory(admin *client.Client) (hosts []string, num uint64, busy bool, leader string, spares []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	h, err := admin.History(ctx)
	if err != nil {
		return nil, 0, false, "", nil, err
	}
	cfgs := h.GetConfigs()
	return h.GetDirectory().GetHosts(), cfgs[len(cfgs)-1].GetNum(), h.GetBusy(), h.GetLeaderAddr(), h.GetDirectory().GetSpares(), nil
}

var (
	large        = e2etest.NewOptIn("large-recovery", "run TestRecoverLargeMachine (minutes; durable cluster of separate processes)")
	largeMiB     = flag.Int("large-recovery-mib", 64, "TestRecoverLargeMachine: MiB of blocks (data and parity) each machine holds")
	largeBlock   = flag.Int("large-recovery-block", 64<<10, "TestRecoverLargeMachine: block size in bytes")
	largePredict = flag.Float64("large-recovery-predict", 0, "TestRecoverLargeMachine: the rebuild rate in MB/s that amalgam-cli bench recovery measured (same block size, a smaller machine); if set, the rebuild must finish within 1.5x the time it predicts")
	largeWait    = flag.Duration("large-recovery-max-wait", 5*time.Second, "TestRecoverLargeMachine: the longest a client operation may wait")
)

// TestRecoverLargeMachine (-large-recovery) fills a durable cluster of 6
// machines (g=3, f=2) and a spare until each machine holds
// -large-recovery-mib of blocks, runs 8 clients writing whole blocks,
// and SIGKILLs one machine. The reconfiguration service moves its slot
// to the spare, whose servers rebuild while the clients keep writing.
// Every block must then read back as last acknowledged (or as a write
// still pending when the clients stopped), no client operation may wait
// longer than -large-recovery-max-wait, and with
// -large-recovery-predict the rebuild must finish within 1.5x the time
// the rate predicts (the "replaced to healthy" rate of amalgam-cli bench
// recovery for a smaller machine of the same block size, so the test
// checks that the rebuild scales linearly with the machine's size).
func TestRecoverLargeMachine(t *testing.T) {
	large.Require(t)
	bs := *largeBlock
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 0, BlockSize: bs}
	perMachine := int64(*largeMiB) << 20
	// Each stripe puts g+f of its blocks on g+f of the n machines.
	l.Stripes = int((perMachine*int64(l.N) + int64((l.G+l.F)*bs) - 1) / int64((l.G+l.F)*bs))
	held := int64(l.Stripes*(l.G+l.F)/l.N) * int64(bs)
	seed := uint64(time.Now().UnixNano())
	victim := rand.New(rand.NewPCG(seed, 1)).IntN(l.N)
	t.Logf("seed %d: %d stripes of %d-byte blocks, %.1f MiB per machine; killing machine %d", seed, l.Stripes, bs, float64(held)/(1<<20), victim)

	dir := t.TempDir()
	addrs := e2etest.FreeAddrs(t, "127.0.0.1", 1+l.N+1)
	entry, machines, spareAddr := addrs[0], addrs[1:1+l.N], addrs[1+l.N]
	var procs []*e2etest.Proc
	defer func() {
		if t.Failed() || *e2etest.KeepLogs {
			for _, p := range procs {
				t.Logf("%s", p.Out.String())
			}
		}
	}()
	procs = append(procs, start(t, "reconfig", "reconfiguration service", "reconfig", "--id", "1", "--addr", entry,
		"--data-dir", filepath.Join(dir, "reconfig"), "--machine-addrs", strings.Join(machines, ","),
		"--g", fmt.Sprint(l.G), "--f", fmt.Sprint(l.F), "--w", fmt.Sprint(l.W), "--block-size", fmt.Sprint(bs),
		"--blocks", fmt.Sprint(l.NumBlocks()), "--suspect-after", "1500ms"))
	nodes := make([]*e2etest.Proc, l.N)
	for m, a := range machines {
		nodes[m] = start(t, fmt.Sprintf("node %d", m), "serving at", "node", "--machine", fmt.Sprint(m), "--addr", a,
			"--reconfig", entry, "--data-dir", filepath.Join(dir, fmt.Sprintf("node-%d", m)))
		procs = append(procs, nodes[m])
	}
	procs = append(procs, start(t, "spare", "spare serving at", "node", "--spare", "--addr", spareAddr,
		"--reconfig", entry, "--data-dir", filepath.Join(dir, "spare")))
	e2etest.WaitFor(t, "healthy at first", e2etest.SafetyStop, func() (bool, string) { return clusterHealthy(entry, 0) })

	admin := e2etest.Dial(t, entry)
	const workers = 8
	w := &blockWriters{t: t, entry: entry, bs: bs, blocks: l.NumBlocks(), last: make([]uint64, l.NumBlocks()), pending: map[uint64]uint64{}}
	fillStart := time.Now()
	w.fill(workers)
	fillTime := time.Since(fillStart)
	t.Logf("filled %d blocks (%.0f MiB of data) in %v: %.1f MB/s", l.NumBlocks(), float64(l.NumBlocks())*float64(bs)/(1<<20),
		fillTime.Round(time.Millisecond), float64(l.NumBlocks())*float64(bs)/1e6/fillTime.Seconds())

	w.run(workers)
	time.Sleep(2 * time.Second)
	before := w.completed()
	killed := time.Now()
	nodes[victim].Kill()
	t.Logf("killed machine %d at %s", victim, machines[victim])
	detect := e2etest.WaitFor(t, "the victim's slot moved to the spare", e2etest.SafetyStop, func() (bool, string) {
		hosts, _, _, _, _, err := clusterHistory(admin)
		if err != nil {
			return false, err.Error()
		}
		return hosts[victim] == spareAddr, fmt.Sprint(hosts)
	})
	replaced := e2etest.WaitFor(t, "the victim's servers replaced", e2etest.SafetyStop, func() (bool, string) {
		_, n, busy, _, _, err := clusterHistory(admin)
		if err != nil {
			return false, err.Error()
		}
		return n == 2 && !busy, fmt.Sprintf("configuration %d, busy %v", n, busy)
	})
	rebuilt := e2etest.WaitFor(t, "healthy again", 30*time.Minute, func() (bool, string) { return clusterHealthy(entry, 2) })
	total := time.Since(killed)
	during := w.completed() - before
	time.Sleep(2 * time.Second)
	w.stop()

	rate := float64(held) / 1e6 / rebuilt.Seconds()
	t.Logf("detected and moved in %v; servers replaced %v later; rebuilt and healthy %v later (%v in all): %.1f MB of blocks at %.2f MB/s; %d writes completed meanwhile",
		detect.Round(time.Millisecond), replaced.Round(time.Millisecond), rebuilt.Round(time.Millisecond), total.Round(time.Millisecond), float64(held)/1e6, rate, during)
	t.Logf("client operations: %d acknowledged, longest wait %v", w.completed(), w.maxWait().Round(time.Millisecond))

	ctx := context.Background()
	cl := admin
	bad := 0
	for b := uint64(0); b < l.NumBlocks(); b++ {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		got, err := cl.Read(rctx, b, 0, bs)
		cancel()
		if err != nil {
			t.Fatalf("final read of block %d: %v", b, err)
		}
		v := binary.LittleEndian.Uint64(got)
		if want, pend := w.last[b], w.pending[b]; (v != want && (pend == 0 || v != pend)) || string(got) != string(content(b, v, bs)) {
			if bad++; bad <= 5 {
				t.Errorf("block %d holds version %d, want the last acknowledged %d (or the pending %d)", b, v, want, pend)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d blocks are not as last acknowledged", bad, l.NumBlocks())
	}
	if mw := w.maxWait(); mw > *largeWait {
		t.Errorf("a client operation waited %v, more than %v", mw.Round(time.Millisecond), *largeWait)
	}
	if *largePredict > 0 {
		want := time.Duration(float64(held) / 1e6 / *largePredict * 1.5 * float64(time.Second))
		if rebuilt > want {
			t.Errorf("rebuilt in %v, more than 1.5x the %v the benchmark's %.1f MB/s predicts", rebuilt.Round(time.Millisecond), (want * 2 / 3).Round(time.Millisecond), *largePredict)
		}
	}
}

// content is version v of block b: the version, then bytes derived from
// both, so a block holding another block's or another version's bytes
// shows.
func content(b, v uint64, bs int) []byte {
	out := make([]byte, bs)
	binary.LittleEndian.PutUint64(out, v)
	x := b*0x9e3779b97f4a7c15 ^ v
	for i := 8; i < bs; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		out[i] = byte(x >> 56)
	}
	return out
}

// blockWriters write whole blocks, each block only by one worker, so the
// last acknowledged version of a block is well defined.
type blockWriters struct {
	t       *testing.T
	entry   string
	bs      int
	blocks  uint64
	mu      sync.Mutex
	last    []uint64          // last acknowledged version of each block
	pending map[uint64]uint64 // a version whose write did not return
	done    int
	longest time.Duration
	quit    chan struct{}
	wg      sync.WaitGroup
}

func (w *blockWriters) dial() *client.Client {
	cl, err := client.Dial(context.Background(), w.entry, client.Options{AttemptTimeout: time.Second})
	if err != nil {
		w.t.Fatalf("dial %s: %v", w.entry, err)
	}
	return cl
}

// write writes version v of block b, timing it.
func (w *blockWriters) write(cl *client.Client, b, v uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	began := time.Now()
	err := cl.Write(ctx, b, 0, content(b, v, w.bs))
	took := time.Since(began)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.pending[b] = v
		w.t.Errorf("write of version %d of block %d: %v after %v", v, b, err, took.Round(time.Millisecond))
		return
	}
	w.last[b], w.done, w.longest = v, w.done+1, max(w.longest, took)
}

// fill writes version 1 of every block with n workers.
func (w *blockWriters) fill(n int) {
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := w.dial()
			defer cl.Close()
			for b := uint64(k); b < w.blocks; b += uint64(n) {
				w.write(cl, b, 1)
			}
		}()
	}
	wg.Wait()
	w.mu.Lock()
	w.longest = 0 // the fill's waits do not count
	w.mu.Unlock()
}

// run starts n workers writing random blocks of their own until stop.
func (w *blockWriters) run(n int) {
	w.quit = make(chan struct{})
	for k := range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			cl := w.dial()
			defer cl.Close()
			rng := rand.New(rand.NewPCG(uint64(k), 7))
			for {
				select {
				case <-w.quit:
					return
				default:
				}
				b := uint64(k) + uint64(n)*rng.Uint64N((w.blocks-uint64(k)+uint64(n)-1)/uint64(n))
				w.mu.Lock()
				v := w.last[b] + 1
				w.mu.Unlock()
				w.write(cl, b, v)
			}
		}()
	}
}

func (w *blockWriters) stop() { close(w.quit); w.wg.Wait() }

func (w *blockWriters) completed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

func (w *blockWriters) maxWait() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest
}
