package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/workload"
)

var killDuration = flag.Duration("kill-duration", 0,
	"how long TestKillNode runs its clients (default 30s, or 8s with -short; env AMALGAM_KILL_DURATION)")

// syncBuf is a bytes.Buffer that a child process writes while the test
// reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is one amalgam-server process, restartable with the same
// arguments.
type proc struct {
	name string
	args []string
	cmd  *exec.Cmd
	out  *syncBuf // every incarnation's output, in order
	done chan struct{}
}

func startProc(t *testing.T, name, ready string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, args: args, out: &syncBuf{}}
	p.start(t, ready)
	t.Cleanup(func() { p.kill() })
	return p
}

// start runs a new incarnation and waits until its output shows ready.
func (p *proc) start(t *testing.T, ready string) {
	t.Helper()
	fmt.Fprintf(p.out, "---- %s starting: amalgam-server %s\n", p.name, strings.Join(p.args, " "))
	mark := len(p.out.String())
	p.cmd = exec.Command(filepath.Join(bin, "amalgam-server"), p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	cmd, done := p.cmd, p.done
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(p.out.String()[mark:], ready) {
		select {
		case <-done:
			t.Fatalf("%s exited before it was ready:\n%s", p.name, p.out)
		case <-deadline:
			t.Fatalf("%s not ready after 30s:\n%s", p.name, p.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL and waits for the process to go.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	fmt.Fprintf(p.out, "---- %s killed (SIGKILL)\n", p.name)
}

// exited reports whether the current incarnation has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// cluster is a reconfiguration replica and n node processes.
type cluster struct {
	entry    string
	reconfig *proc
	nodes    []*proc
}

func (c *cluster) logs() string {
	var b strings.Builder
	b.WriteString(c.reconfig.out.String())
	for _, n := range c.nodes {
		b.WriteString(n.out.String())
	}
	return b.String()
}

// startCluster runs `amalgam-server reconfig` and one `amalgam-server node`
// per machine, as separate processes on loopback.
func startCluster(t *testing.T, l erasure.Layout, durability string) *cluster {
	t.Helper()
	port := freePort(t, l.N)
	dir := t.TempDir()
	c := &cluster{entry: fmt.Sprintf("127.0.0.1:%d", port)}
	var addrs []string
	for m := 0; m < l.N; m++ {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port+1+m))
	}
	c.reconfig = startProc(t, "reconfig", "reconfiguration service",
		"reconfig", "--addr", c.entry, "--data-dir", filepath.Join(dir, "reconfig"), "--id", "1",
		"--machine-addrs", strings.Join(addrs, ","), "--g", fmt.Sprint(l.G), "--f", fmt.Sprint(l.F), "--w", fmt.Sprint(l.W),
		"--block-size", fmt.Sprint(l.BlockSize), "--blocks", fmt.Sprint(l.NumBlocks()), "--durability", durability)
	for m := 0; m < l.N; m++ {
		c.nodes = append(c.nodes, startProc(t, fmt.Sprintf("node %d", m), "serving at",
			"node", "--machine", fmt.Sprint(m), "--addr", addrs[m], "--reconfig", c.entry,
			"--data-dir", filepath.Join(dir, fmt.Sprintf("node-%d", m)), "--durability", durability))
	}
	return c
}

func killTestDuration(t *testing.T) time.Duration {
	if *killDuration > 0 {
		return *killDuration
	}
	if s := os.Getenv("AMALGAM_KILL_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("AMALGAM_KILL_DURATION=%q is not a positive duration", s)
		}
		return d
	}
	if testing.Short() {
		return 8 * time.Second
	}
	return 30 * time.Second
}

// TestKillNode runs `reconfig` and five `node` processes (durable), and 8
// concurrent clients issuing mixed operations while one node process is
// killed with SIGKILL and restarted three times. No acknowledged write may
// be lost, and the whole history, final reads of every block included, must
// be linearizable.
//
// The configuration is static (no replacement), so while the node is down,
// operations on its shard and on stripes whose parity it holds stall; they
// complete once it is back and the durable streams resume.
func TestKillNode(t *testing.T) {
	dur := killTestDuration(t)
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 10, BlockSize: 64}
	const (
		workers   = 8
		shared    = 12 // the mixed workload runs on blocks [0, shared)
		ledger    = shared
		opTimeout = 20 * time.Second // longer than a node is down
	)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	victim := rng.IntN(l.N)
	t.Logf("seed %d: %v of clients, killing node %d three times", seed, dur, victim)

	c := startCluster(t, l, "durable")
	failed := true
	defer func() {
		if failed || t.Failed() {
			t.Logf("process output:\n%s", c.logs())
		}
	}()

	start := time.Now()
	now := func() int64 { return time.Since(start).Nanoseconds() }
	var (
		mu       sync.Mutex
		history  []porcupine.Operation
		pending  int
		acked    int // acknowledged transactions that write
		nextCID  = workers
		lastAck  [workers]uint64   // ledger: last acknowledged counter
		inFlight [workers][]uint64 // ledger: counters of pending writes
	)
	newClient := func(ctx context.Context) (*client.Client, error) {
		return client.Dial(ctx, c.entry, client.Options{AttemptTimeout: time.Second})
	}

	// The workers: each runs one transaction at a time; every fourth one
	// writes a counter into the worker's own ledger block.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := context.Background()
			cl, err := newClient(ctx)
			if err != nil {
				t.Errorf("worker %d: %v", w, err)
				return
			}
			defer func() { cl.Close() }()
			cid := w
			wrnd := rand.New(rand.NewPCG(seed, uint64(w)+2))
			var script [][]msg.Op
			var counter uint64
			for i := 0; ; i++ {
				if len(script) == 0 {
					script = workload.Generate(wrnd.Uint64, l, shared, 256, workload.DefaultMix)
				}
				select {
				case <-stop:
					return
				default:
				}
				ops := script[0]
				script = script[1:]
				var ledgerVal uint64
				if i%4 == 3 {
					counter++
					ledgerVal = counter
					ops = []msg.Op{{Kind: msg.OpWrite, Block: uint64(ledger + w), Data: binary.LittleEndian.AppendUint64(nil, counter)}}
				}
				octx, cancel := context.WithTimeout(ctx, opTimeout)
				call := now()
				out, err := cl.Txn(octx, ops)
				ret := now()
				cancel()
				op := porcupine.Operation{ClientId: cid, Input: ops, Call: call}
				switch {
				case err == nil:
					op.Output, op.Return = msg.Reply{Outcome: out}, ret
				case errors.Is(err, client.ErrInvalid):
					t.Errorf("worker %d: %s refused: %v", w, workload.DescribeTxn(ops), err)
					return
				default:
					// Timed out: it may still take effect at any time, so
					// it stays pending to the end of the history. A fresh
					// client id keeps one request per id outstanding.
					op.Output, op.Return = nil, math.MaxInt64
				}
				mu.Lock()
				history = append(history, op)
				if op.Output == nil {
					pending++
					if ledgerVal > 0 {
						inFlight[w] = append(inFlight[w], ledgerVal)
					}
					cid = nextCID
					nextCID++
				} else {
					if writes(ops) && !out.Aborted {
						acked++
					}
					if ledgerVal > 0 {
						lastAck[w] = ledgerVal
					}
				}
				mu.Unlock()
				if op.Output == nil {
					t.Logf("worker %d: %s timed out after %v (%v); recorded as pending", w, workload.DescribeTxn(ops), time.Duration(ret-call), err)
					cl.Close()
					if cl, err = newClient(ctx); err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
				}
			}
		}(w)
	}

	// Kill the victim three times: SIGKILL, a pause, restart, then a
	// probe write on the victim's shard must commit (its data server is
	// back, with a quorum of its stripe's parity servers) before the next
	// kill.
	probeBlock := uint64(math.MaxUint64)
	for _, b := range l.ShardBlocks(victim) {
		if b >= ledger+workers {
			probeBlock = b
			break
		}
	}
	if probeBlock == math.MaxUint64 {
		t.Fatalf("node %d's shard has no block outside the workload's", victim)
	}
	probe, err := newClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	mu.Lock()
	probeCID := nextCID
	nextCID++
	mu.Unlock()
	down := min(dur/10, 2*time.Second)
	type window struct{ kill, restart, rejoined int64 }
	var windows []window
	// Progress gates each kill and the end of the run: the schedule waits
	// for completed transactions, not for a time window to hold enough.
	const minOps = 100
	waitCompleted := func(n int) {
		guard := time.Now().Add(3 * time.Minute) // a hang guard only
		for {
			mu.Lock()
			done := len(history) - pending
			mu.Unlock()
			if done >= n || t.Failed() {
				return
			}
			if time.Now().After(guard) {
				t.Fatalf("only %d of %d transactions completed; the cluster stopped making progress", done, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for k := 1; k <= 3; k++ {
		time.Sleep(time.Until(start.Add(dur * time.Duration(k) / 5)))
		waitCompleted(minOps * k / 4)
		if t.Failed() {
			break
		}
		n := c.nodes[victim]
		if n.exited() {
			t.Fatalf("node %d exited on its own", victim)
		}
		win := window{kill: now()}
		n.kill()
		time.Sleep(down)
		n.start(t, "serving at")
		win.restart = now()
		ops := []msg.Op{{Kind: msg.OpWrite, Block: probeBlock, Data: binary.LittleEndian.AppendUint64(nil, uint64(k))}}
		pctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		out, err := probe.Txn(pctx, ops)
		cancel()
		win.rejoined = now()
		mu.Lock()
		op := porcupine.Operation{ClientId: probeCID, Input: ops, Call: win.restart, Output: msg.Reply{Outcome: out}, Return: win.rejoined}
		if err != nil {
			op.Output, op.Return = nil, math.MaxInt64
			pending++
		}
		history = append(history, op)
		mu.Unlock()
		if err != nil {
			t.Fatalf("node %d restarted at %v but a write on its shard did not commit within %v: %v",
				victim, time.Duration(win.restart), opTimeout, err)
		}
		windows = append(windows, win)
		t.Logf("node %d killed at %v, restarted at %v, serving its shard again %v later", victim, time.Duration(win.kill).Round(time.Millisecond),
			time.Duration(win.restart).Round(time.Millisecond), time.Duration(win.rejoined-win.restart).Round(time.Millisecond))
	}
	time.Sleep(time.Until(start.Add(dur)))
	waitCompleted(minOps)
	close(stop)
	wg.Wait() // in-flight transactions finish (or time out) first
	for m, n := range c.nodes {
		if n.exited() {
			t.Fatalf("node %d exited on its own", m)
		}
	}
	if t.Failed() {
		return
	}

	// Final reads of every block, after everything else returned, so a
	// lost write shows in the linearizability check too.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cl, err := newClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	final := map[uint64][]byte{}
	for b := uint64(0); b < l.NumBlocks(); b++ {
		ops := []msg.Op{{Kind: msg.OpRead, Block: b}}
		call := now()
		out, err := cl.Txn(ctx, ops)
		if err != nil {
			t.Fatalf("final read of block %d: %v", b, err)
		}
		history = append(history, porcupine.Operation{ClientId: nextCID, Input: ops, Call: call, Output: msg.Reply{Outcome: out}, Return: now()})
		final[b] = out.Results[0].Data
	}

	// No acknowledged ledger write is lost: each ledger block holds the
	// last acknowledged counter or a later one that was still pending.
	for w := 0; w < workers; w++ {
		got := binary.LittleEndian.Uint64(final[uint64(ledger+w)])
		ok := got == lastAck[w]
		for _, p := range inFlight[w] {
			ok = ok || (got == p && p > lastAck[w])
		}
		if !ok {
			t.Errorf("worker %d's ledger block holds counter %d; the last acknowledged write was %d (pending: %v): an acknowledged write was lost",
				w, got, lastAck[w], inFlight[w])
		}
	}

	// A timeline of completions shows the stalls and the recoveries.
	const bucket = 500 * time.Millisecond
	counts := make([]int, (dur+2*bucket)/bucket)
	for _, op := range history {
		if op.Output != nil && op.Return/int64(bucket) < int64(len(counts)) {
			counts[op.Return/int64(bucket)]++
		}
	}
	t.Logf("transactions completed per %v: %v", bucket, counts)
	// Kills hit transactions in flight.
	interrupted := 0
	for _, op := range history {
		for _, win := range windows {
			if op.Call < win.kill && op.Return > win.kill {
				interrupted++
			}
		}
	}
	if interrupted == 0 {
		t.Errorf("no transaction was in flight when the node was killed")
	}
	t.Logf("%d transactions: %d completed (%d acknowledged writing ones), %d pending (timed out), %d in flight at a kill; node %d killed and restarted %d times, down %v each",
		len(history), len(history)-pending, acked, pending, interrupted, victim, len(windows), down)
	if len(history)-pending < minOps {
		t.Fatalf("only %d transactions completed; the test exercised too little", len(history)-pending)
	}
	checkStart := time.Now()
	res, info := porcupine.CheckOperationsVerbose(workload.Model(l), history, 3*time.Minute)
	switch res {
	case porcupine.Ok:
		t.Logf("linearizable: checked %d operations with porcupine in %v", len(history), time.Since(checkStart).Round(time.Millisecond))
	default:
		viz := filepath.Join(os.TempDir(), fmt.Sprintf("amalgam-kill-%d.html", seed))
		if err := porcupine.VisualizePath(workload.Model(l), info, viz); err == nil {
			t.Logf("visualization in %s", viz)
		}
		t.Fatalf("history of %d operations: porcupine says %v", len(history), res)
	}
	failed = false
}

// writes reports whether a transaction changes a block when it commits.
func writes(ops []msg.Op) bool {
	for _, op := range ops {
		switch op.Kind {
		case msg.OpWrite, msg.OpXor, msg.OpAdd, msg.OpCas:
			return true
		}
	}
	return false
}
