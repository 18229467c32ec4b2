package runtime

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/baselines/paxos"
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
			if res := porcupine.CheckOperations(workload.Model(l), hist); !res {
				t.Fatalf("history of %d operations is not linearizable", len(hist))
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

// A baseline refuses durable mode rather than pretending to persist.
func TestBaselineRefusesDurable(t *testing.T) {
	_, err := StartBaselineLocal(ShardedPaxos, LocalOptions{Layout: testLayout, Durability: "durable", Addr: "127.0.0.1:0"})
	if err == nil {
		t.Fatal("durable baseline started")
	}
	if _, err := NewBaseline("paxos", testLayout, paxos.Timing{}); err == nil {
		t.Fatal("unknown protocol accepted")
	}
}
