package e2e

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

var killDuration = flag.Duration("kill-duration", 0,
	"how long TestKillNode runs its clients (default 30s, or 8s with -short; env AMALGAM_KILL_DURATION)")

// startProc starts amalgam-server with args and waits until its output
// shows ready.
func startProc(t *testing.T, name, ready string, args ...string) *e2etest.Proc {
	t.Helper()
	return e2etest.StartProc(t, name, ready, append([]string{filepath.Join(bin, "amalgam-server")}, args...)...)
}

// cluster is a reconfiguration replica and n node processes.
type cluster struct {
	entry    string
	reconfig *e2etest.Proc
	nodes    []*e2etest.Proc
}

func (c *cluster) logs() string {
	var b strings.Builder
	b.WriteString(c.reconfig.Out.String())
	for _, n := range c.nodes {
		b.WriteString(n.Out.String())
	}
	return b.String()
}

// startCluster runs `amalgam-server reconfig` and one `amalgam-server node`
// per machine, as separate processes on loopback.
func startCluster(t *testing.T, l erasure.Layout, durability string) *cluster {
	t.Helper()
	port := e2etest.FreePort(t, l.N)
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

	ld := &e2etest.Load{T: t, Entries: c.entry, Layout: l, Seed: seed, Workers: workers, Shared: shared, Timeout: opTimeout}
	ld.Start()
	start := ld.Began()
	defer ld.Stop()

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
	probe := e2etest.DialAttempt(t, c.entry, time.Second)
	probeCID := ld.NewClientID()
	down := min(dur/10, 2*time.Second)
	type window struct{ kill, restart, rejoined int64 }
	var windows []window
	// Progress gates each kill and the end of the run: the schedule waits
	// for completed transactions, not for a time window to hold enough.
	const minOps = 100
	waitCompleted := func(n int) {
		guard := time.Now().Add(e2etest.SafetyStop) // a hang guard only
		for {
			done := ld.Ops() - ld.Pending()
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
		if n.Exited() {
			t.Fatalf("node %d exited on its own", victim)
		}
		win := window{kill: ld.Now()}
		n.Kill()
		time.Sleep(down)
		n.Start(t)
		win.restart = ld.Now()
		// The probe is tried until it commits; an attempt that times out
		// stays pending, and the next runs under a new client id.
		ops := []msg.Op{{Kind: msg.OpWrite, Block: probeBlock, Data: binary.LittleEndian.AppendUint64(nil, uint64(k))}}
		for {
			call := ld.Now()
			pctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			out, err := probe.Txn(pctx, ops)
			cancel()
			win.rejoined = ld.Now()
			if err == nil {
				ld.Record(porcupine.Operation{ClientId: probeCID, Input: ops, Call: call, Output: msg.Reply{Outcome: out}, Return: win.rejoined})
				break
			}
			ld.Record(porcupine.Operation{ClientId: probeCID, Input: ops, Call: call, Return: math.MaxInt64})
			probeCID = ld.NewClientID()
			if time.Duration(win.rejoined-win.restart) > e2etest.SafetyStop {
				t.Fatalf("node %d restarted at %v but a write on its shard did not commit in %v: %v",
					victim, time.Duration(win.restart), e2etest.SafetyStop, err)
			}
			t.Logf("probe write on node %d's shard: %v; trying again", victim, err)
		}
		windows = append(windows, win)
		t.Logf("node %d killed at %v, restarted at %v, serving its shard again %v later", victim, time.Duration(win.kill).Round(time.Millisecond),
			time.Duration(win.restart).Round(time.Millisecond), time.Duration(win.rejoined-win.restart).Round(time.Millisecond))
	}
	time.Sleep(time.Until(start.Add(dur)))
	waitCompleted(minOps)
	ld.Stop() // in-flight transactions finish (or time out) first
	for m, n := range c.nodes {
		if n.Exited() {
			t.Fatalf("node %d exited on its own", m)
		}
	}
	if t.Failed() {
		return
	}

	// Final reads of every block, after everything else returned, so a
	// lost write shows in the linearizability check too. No acknowledged
	// ledger write may be lost: each ledger block holds the last
	// acknowledged counter or a later one that was still pending.
	ctx, cancel := context.WithTimeout(context.Background(), e2etest.SafetyStop)
	defer cancel()
	ld.FinalReads(ctx, l.NumBlocks(), opTimeout)

	// A timeline of completions shows the stalls and the recoveries.
	history := ld.History()
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
	pending := ld.Pending()
	t.Logf("%d transactions: %d completed (%d acknowledged writing ones), %d pending (timed out), %d in flight at a kill; node %d killed and restarted %d times, down %v each",
		len(history), len(history)-pending, ld.Acked(), pending, interrupted, victim, len(windows), down)
	if len(history)-pending < minOps {
		t.Fatalf("only %d transactions completed; the test exercised too little", len(history)-pending)
	}
	v, viz := ld.Check("kill")
	t.Log(v)
	if p := v.Problem(); p != "" {
		t.Fatalf("%s; visualization in %s", p, viz)
	}
	failed = false
}
