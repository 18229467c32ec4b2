package runtime

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/workload"
)

// safetyStop bounds waits in the tests only to turn a hang into a clear
// failure: a loaded machine may take longer than any short window.
const safetyStop = 5 * time.Minute

var testLayout = erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 10, BlockSize: 64}

func startLocal(t *testing.T, l erasure.Layout, durability, dir string) *Local {
	t.Helper()
	lc, err := StartLocal(LocalOptions{Layout: l, Durability: durability, DataDir: dir, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	return lc
}

// clusterBlocks reads every data block and parity block of stripe st.
func stripeBlocks(t *testing.T, lc *Local, st int) (dataBlocks, parityBlocks [][]byte, busy bool) {
	t.Helper()
	l := lc.Cluster.Config.Layout
	ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
	defer cancel()
	for pos := 0; pos < l.G; pos++ {
		m := l.DataMachine(st, pos)
		err := lc.Machines[m].Inspect(ctx, msg.DataAddr(m), func(n node.Node) {
			d := n.(*data.Server)
			dataBlocks = append(dataBlocks, bytes.Clone(d.Block(l.Block(st, pos))))
			busy = busy || d.PendingOn(st)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < l.F; k++ {
		m := l.ParityMachine(st, k)
		err := lc.Machines[m].Inspect(ctx, msg.ParityAddr(m), func(n node.Node) {
			p := n.(*parity.Server)
			parityBlocks = append(parityBlocks, bytes.Clone(p.Block(st)))
			busy = busy || p.HoldsOn(st)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dataBlocks, parityBlocks, busy
}

// waitParityConsistent waits until every stripe is quiescent and its
// parity blocks equal the encoding of its data blocks.
func waitParityConsistent(t *testing.T, lc *Local) {
	t.Helper()
	l := lc.Cluster.Config.Layout
	code, err := erasure.NewCode(l.G, l.F)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(safetyStop) // a hang guard
	for st := 0; st < l.Stripes; st++ {
		for {
			d, p, busy := stripeBlocks(t, lc, st)
			want, err := code.Encode(d)
			if err != nil {
				t.Fatal(err)
			}
			ok := !busy
			for k := range want {
				ok = ok && bytes.Equal(p[k], want[k])
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("stripe %d: parity %x is not the encoding %x of data %x (busy %v)", st, p, want, d, busy)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// readAll reads every block.
func readAll(t *testing.T, c *client.Client, l erasure.Layout) [][]byte {
	t.Helper()
	out := make([][]byte, l.NumBlocks())
	for b := range out {
		got, err := c.Read(context.Background(), uint64(b), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[b] = got
	}
	return out
}

// runModel runs random transactions through c and checks each outcome
// against the sequential specification (one client, so the order is the
// real order).
func runModel(t *testing.T, c *client.Client, l erasure.Layout, seed uint64, n int, st map[uint64][]byte) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 1))
	script := workload.Generate(rnd.Uint64, l, 0, n, workload.DefaultMix)
	get := func(b uint64) []byte {
		if v, ok := st[b]; ok {
			return v
		}
		return make([]byte, l.BlockSize)
	}
	for i, ops := range script {
		got, err := c.Txn(context.Background(), ops)
		if err != nil {
			t.Fatalf("txn %d %s: %v", i, workload.DescribeTxn(ops), err)
		}
		want, written := msg.Execute(ops, get)
		if !workload.SameOutcome(got, want) {
			t.Fatalf("txn %d %s: got %s, want %s", i, workload.DescribeTxn(ops),
				workload.DescribeReply(msg.Reply{Outcome: got}), workload.DescribeReply(msg.Reply{Outcome: want}))
		}
		for b, v := range written {
			st[b] = v
		}
	}
}

func TestLocalClusterMemory(t *testing.T) {
	lc := startLocal(t, testLayout, "memory", "")
	defer lc.Close()
	c := e2etest.Dial(t, lc.EntryAddr)
	runModel(t, c, testLayout, 1, 200, map[uint64][]byte{})
	waitParityConsistent(t, lc)
}

func TestLocalClusterDurableRestart(t *testing.T) {
	dir := t.TempDir()
	l := testLayout
	l.W = 0
	lc := startLocal(t, l, "durable", dir)
	c := e2etest.Dial(t, lc.EntryAddr)
	model := map[uint64][]byte{}
	runModel(t, c, l, 2, 100, model)
	waitParityConsistent(t, lc)
	lc.Close()

	lc = startLocal(t, l, "durable", dir)
	defer lc.Close()
	c = e2etest.Dial(t, lc.EntryAddr)
	for b, got := range readAll(t, c, l) {
		want := model[uint64(b)]
		if want == nil {
			want = make([]byte, l.BlockSize)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("block %d after restart = %x, want %x", b, got, want)
		}
	}
	waitParityConsistent(t, lc)
	runModel(t, c, l, 3, 50, model)
	waitParityConsistent(t, lc)
}

func TestLocalClusterWitnesses(t *testing.T) {
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 8, BlockSize: 32}
	lc := startLocal(t, l, "durable", t.TempDir())
	defer lc.Close()
	c := e2etest.Dial(t, lc.EntryAddr)
	runModel(t, c, l, 4, 100, map[uint64][]byte{})
	waitParityConsistent(t, lc)
}

var _ = fmt.Sprint
