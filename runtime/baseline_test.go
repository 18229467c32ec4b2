package runtime

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/workload"
)

func startBaseline(t *testing.T, protocol string, l erasure.Layout) *BaselineLocal {
	t.Helper()
	bl, err := StartBaselineLocal(protocol, LocalOptions{Layout: l, Durability: "memory", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bl.Close)
	return bl
}

// Both baselines run on the runtime behind the unchanged Go client: one
// client's mixed transactions (RSPaxos runs them as GETs and PUTs) match
// the sequential specification.
//
// The baseline tests' attempts and transactions are bounded only by
// safetyStop. Nothing fails in them that the Go client must retry
// elsewhere, and a retry costs: the Go client sends a baseline
// transaction that timed out to the next machine, which runs it from its
// first GET again (with twice the bound) while the replicas still serve
// the abandoned one; an RSPaxos read-modify-write under -race on a loaded
// machine is a GET and a PUT of two rounds each through 7 replicas.
func TestBaselineLocalSequential(t *testing.T) {
	for _, p := range []string{ShardedPaxos, RSPaxos} {
		t.Run(p, func(t *testing.T) {
			bl := startBaseline(t, p, testLayout)
			if got, want := len(bl.Machines), max(testLayout.N, bl.Baseline.Members()); got != want {
				t.Fatalf("%d machines, want %d", got, want)
			}
			c := e2etest.DialAttempt(t, bl.EntryAddr, safetyStop)
			runModel(t, c, testLayout, 2, 150, map[uint64][]byte{})
		})
	}
}

// Concurrent clients with machine 0 stopped halfway (it hosts group 0's
// initial leader and one member of two other groups): the history stays linearizable (porcupine)
// and every operation completes. RSPaxos has no isolation between a GET
// and the PUT of a read-modify-write, so its clients only write whole
// blocks and read.
func TestBaselineLocalLeaderFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("stops machines and waits for elections (about 10 s)")
	}
	l := erasure.Layout{N: 5, G: 3, F: 1, Stripes: 4, BlockSize: 32}
	for _, p := range []string{ShardedPaxos, RSPaxos} {
		t.Run(p, func(t *testing.T) {
			bl := startBaseline(t, p, l)
			const clients, perClient = 4, 60
			var mu sync.Mutex
			var hist []porcupine.Operation
			start := time.Now()
			var stopped atomic.Int64 // when machine 0 stopped (ns since start)
			stopped.Store(math.MaxInt64)
			var wg sync.WaitGroup
			for ci := 0; ci < clients; ci++ {
				c := e2etest.DialAttempt(t, bl.EntryAddr, safetyStop)
				rnd := rand.New(rand.NewPCG(uint64(ci), 9))
				script := workload.Generate(rnd.Uint64, l, 0, perClient, workload.DefaultMix)
				if p == RSPaxos {
					script = wholeBlockScript(rnd, l, perClient)
				}
				wg.Go(func() {
					for i, ops := range script {
						if i == perClient/2 && ci == 0 {
							bl.Machines[0].Stop()
							stopped.Store(time.Since(start).Nanoseconds())
						}
						call := time.Since(start).Nanoseconds()
						ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
						out, err := c.Txn(ctx, ops)
						cancel()
						if err != nil {
							t.Errorf("client %d txn %d %s: %v", ci, i, workload.DescribeTxn(ops), err)
							return
						}
						mu.Lock()
						hist = append(hist, porcupine.Operation{ClientId: ci, Input: ops, Call: call,
							Output: msg.Reply{Outcome: out}, Return: time.Since(start).Nanoseconds()})
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			if len(hist) != clients*perClient {
				t.Fatalf("%d operations completed, want %d", len(hist), clients*perClient)
			}
			// Group 0 lost its leader: operations on it after the stop
			// completed only because another member took over.
			after := 0
			for _, op := range hist {
				if op.Call > stopped.Load() && l.Shard(op.Input.([]msg.Op)[0].Block) == 0 {
					after++
				}
			}
			if after == 0 {
				t.Fatal("no operation on group 0 ran after its leader's machine stopped")
			}
			t.Logf("%d operations on group 0 after its leader stopped", after)
			v := workload.Check(l, hist)
			t.Log(v)
			if p := v.Problem(); p != "" {
				t.Fatal(p)
			}
		})
	}
}

// wholeBlockScript is n single-op transactions: whole-block writes of
// small values and whole-block reads.
func wholeBlockScript(rnd *rand.Rand, l erasure.Layout, n int) [][]msg.Op {
	var out [][]msg.Op
	for range n {
		b := rnd.Uint64N(l.NumBlocks())
		if rnd.IntN(2) == 0 {
			out = append(out, []msg.Op{{Kind: msg.OpRead, Block: b}})
			continue
		}
		v := make([]byte, l.BlockSize)
		for i := range v {
			v[i] = byte(rnd.IntN(3))
		}
		out = append(out, []msg.Op{{Kind: msg.OpWrite, Block: b, Data: v}})
	}
	return out
}

// A baseline refuses a durability it does not know, and an unknown
// protocol is refused.
func TestBaselineRefusesDurability(t *testing.T) {
	_, err := StartBaselineLocal(RSPaxos, LocalOptions{Layout: testLayout, Durability: "disk", DataDir: t.TempDir(), Addr: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "durability must be durable or memory") {
		t.Fatalf("durability disk: err = %v", err)
	}
	if _, err := NewBaseline("paxos", testLayout, paxos.Timing{}); err == nil {
		t.Fatal("unknown protocol accepted")
	}
}

// dialBaseline connects to a baseline cluster with attempts bounded only
// by safetyStop (see TestBaselineLocalSequential).
func dialBaseline(t testing.TB, entry string) *client.Client {
	t.Helper()
	return e2etest.DialAttempt(t, entry, safetyStop)
}

// A durable baseline cluster restarted from its stores: concurrent
// clients write whole blocks (each client its own) and add to counters
// (each client its own block, so that RSPaxos's client-side
// read-modify-write needs no isolation) through it, every machine stops
// (its store closed, as when the process exits), and the cluster started
// again from the same directories holds every acknowledged write and
// every acknowledged addition, in every one of three rounds. Every
// replica restarts as a follower, so each round's first operations wait
// for an election.
func TestBaselineDurableRestart(t *testing.T) {
	for _, p := range durableBaselines() {
		t.Run(p, func(t *testing.T) { durableRestart(t, p) })
	}
}

// durableBaselines are the baselines the durable tests run: with -short
// (CI's -race step) ShardedPaxos only, as RSPaxos's runs take about 30 s
// each under -race on an idle machine; without it (CI's go test ./...)
// both.
func durableBaselines() []string {
	if testing.Short() {
		return []string{ShardedPaxos}
	}
	return []string{ShardedPaxos, RSPaxos}
}

func durableRestart(t *testing.T, protocol string) {
	l := testLayout
	dir := t.TempDir()
	const clients = 4
	counter := func(i int) uint64 { return l.NumBlocks() - 1 - uint64(i) } // client i's counter block
	want := map[uint64][]byte{}                                            // acknowledged whole-block writes
	adds := map[uint64]uint64{}                                            // acknowledged additions, by counter block
	start := func() *BaselineLocal {
		bl, err := StartBaselineLocal(protocol, LocalOptions{Layout: l, Durability: "durable", DataDir: dir, Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		c := dialBaseline(t, bl.EntryAddr)
		checkRestored(t, c, l, want)
		checkCounters(t, c, adds)
		return bl
	}
	for round := range 3 {
		bl := start()
		if st, err := dialBaseline(t, bl.EntryAddr).Status(context.Background()); err != nil || st.GetDurability() != "durable" {
			t.Fatalf("status %v, %v: want durability durable", st, err)
		}
		var mu sync.Mutex
		wg := startClients(clients, round, func() *client.Client { return dialBaseline(t, bl.EntryAddr) }, func(i int, c *client.Client, r *rand.Rand) {
			for range 25 {
				ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
				var err error
				if r.IntN(2) == 0 {
					b := ownBlock(r, i, clients, l.NumBlocks()-clients) // the last blocks are counters
					v := randBytes(r, l.BlockSize)
					err = c.Write(ctx, b, 0, v)
					if err == nil {
						mu.Lock()
						want[b] = v
						mu.Unlock()
					}
				} else {
					_, err = c.Txn(ctx, []msg.Op{{Kind: msg.OpAdd, Block: counter(i), Delta: 1}})
					if err == nil {
						mu.Lock()
						adds[counter(i)]++
						mu.Unlock()
					}
				}
				cancel()
				if err != nil {
					t.Errorf("round %d client %d: %v", round, i, err)
					return
				}
			}
		})
		wg.Wait()
		bl.Close()
		if t.Failed() {
			return
		}
	}
	start().Close()
}

// checkCounters checks through c that every block in want holds at
// offset 0 the counter want gives.
func checkCounters(t *testing.T, c *client.Client, want map[uint64]uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
	defer cancel()
	for b, n := range want {
		v, err := c.Read(ctx, b, 0, 8)
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(v); got != n {
			t.Fatalf("counter of block %d = %d, want %d acknowledged additions", b, got, n)
		}
	}
}

// TestPowerLoss for durable ShardedPaxos and RSPaxos clusters.
func TestBaselinePowerLoss(t *testing.T) {
	for _, p := range durableBaselines() {
		t.Run(p, func(t *testing.T) {
			powerLoss(t, testLayout, dialBaseline, func(o LocalOptions) powerCluster {
				bl, err := StartBaselineLocal(p, o)
				if err != nil {
					t.Fatal(err)
				}
				return powerCluster{entry: bl.EntryAddr, close: bl.Close}
			})
		})
	}
}
