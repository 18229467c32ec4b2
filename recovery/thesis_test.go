package recovery_test

// Tests that follow the thesis, chapter 3, for the data recovery protocol
// (3.3.2.3), the stripe snapshot. Each quotes (or closely paraphrases)
// the rule it checks. The last drives real data and parity servers.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/recovery"
)

// Stripe 0 has data on machines 0, 1, 2 and parity on 3, 4.
var lay = erasure.Layout{N: 5, G: 3, F: 2, Stripes: 1, BlockSize: 8}

const probe node.Addr = "probe/0" // a recovering server that is only a Rebuild

// 3.3.2.3 step 1: "The recovering server first generates a unique nonce,
// v, and sends <STRIPE-SNAPSHOT, stripe-id, v> to each of the data
// servers." A recovering data server's own block is the null answer it
// does not ask for (step 4: "responses from all servers (including
// itself)").
func TestThesis3323AsksEveryDataServer(t *testing.T) {
	for _, self := range []int{-1, 1} {
		ctx := nodetest.New(probe)
		r := recovery.New(lay, 0, 7, self)
		r.Ask(ctx, lay, 3)
		want := []node.Addr{msg.DataAddr(0), msg.DataAddr(1), msg.DataAddr(2)}
		if self >= 0 {
			want = slices.Delete(want, self, self+1)
		}
		effs := ctx.Take()
		if got := effs.Kind(nodetest.Send).Addrs(); !slices.Equal(got, want) || len(effs) != len(want) {
			t.Fatalf("requester at position %d asked %v, want %v", self, effs, want)
		}
		for _, q := range nodetest.Msgs[msg.StripeSnapshot](effs) {
			if q != (msg.StripeSnapshot{Num: 3, Stripe: 0, Nonce: 7, Requester: probe}) {
				t.Fatalf("request %+v", q)
			}
		}
	}
}

// Decision (docs/recovery.md): "a rebuild that heard no answer for a retry
// period starts a new round under a new nonce (answers to the old one are
// ignored) instead of asking again under the same nonce." The nonce stays
// unique (step 1).
func TestThesis3323SilentRoundRestartsUnderANewNonce(t *testing.T) {
	nonce := uint64(7)
	r := recovery.New(lay, 0, nonce, -1)
	// The owner's retry timer is shared: its first firing may come at
	// once, so a round's period starts there.
	if r.Retry(&nonce) {
		t.Fatal("a round restarted before a whole period passed")
	}
	if !r.Retry(&nonce) || r.Nonce != 8 || nonce != 8 {
		t.Fatalf("after a silent period: nonce %d (counter %d), want a new round under 8", r.Nonce, nonce)
	}
	r.OnData(lay, msg.SnapshotData{Stripe: 0, Nonce: 7, Shard: 0, Block: make([]byte, 8)})
	if r.DGot != 0 {
		t.Fatal("an answer to the old nonce counted")
	}
	r.OnData(lay, msg.SnapshotData{Stripe: 0, Nonce: 8, Shard: 0, Block: make([]byte, 8)})
	if r.Retry(&nonce) || r.Nonce != 8 {
		t.Fatal("a round that heard an answer was restarted")
	}
}

func encode(t *testing.T, blocks [][]byte) [][]byte {
	t.Helper()
	code, err := erasure.NewCode(lay.G, lay.F)
	if err != nil {
		t.Fatal(err)
	}
	par, err := code.Encode(blocks)
	if err != nil {
		t.Fatal(err)
	}
	return par
}

// 3.3.2.3 step 4: "Once the recovering server has received responses from
// all servers (including itself) and at least g non-null data/parity
// blocks, it can use these blocks to decode the original stripe."
// Step 2: degraded data servers "do not send a block [...] but do send
// their current op_num", which the recovering server keeps (the version
// numbers of a rebuilt parity block).
func TestThesis3323DecodesWithEveryDataServerAndGBlocks(t *testing.T) {
	blocks := [][]byte{[]byte("block-0."), []byte("block-1."), []byte("block-2.")}
	par := encode(t, blocks)
	r := recovery.New(lay, 0, 1, 0) // data/0 rebuilding its own block
	answer := func(pos int, b []byte, opNum uint64) {
		r.OnData(lay, msg.SnapshotData{Stripe: 0, Nonce: 1, Shard: pos, Block: b, OpNum: opNum, Primary: 1})
	}
	answer(1, nil, 4) // degraded
	r.OnParity(lay, msg.SnapshotParity{Stripe: 0, Nonce: 1, Index: 0, Block: par[0]})
	r.OnParity(lay, msg.SnapshotParity{Stripe: 0, Nonce: 1, Index: 1, Block: par[1]})
	if _, _, ok := r.Decode(lay); ok {
		t.Fatal("decoded before data/2 answered")
	}
	answer(2, blocks[2], 9)
	checkDecode(t, r, lay, blocks, par, "every data server answered and g = 3 blocks (data/2, both parities)")
	if !slices.Equal(r.OpNums, []uint64{0, 4, 9}) {
		t.Fatalf("op_nums %v, want [0 4 9]", r.OpNums)
	}

	// With fewer than g non-null blocks there is nothing to decode.
	r2 := recovery.New(lay, 0, 1, 0)
	r2.OnData(lay, msg.SnapshotData{Stripe: 0, Nonce: 1, Shard: 1})
	r2.OnData(lay, msg.SnapshotData{Stripe: 0, Nonce: 1, Shard: 2, Block: blocks[2]})
	r2.OnParity(lay, msg.SnapshotParity{Stripe: 0, Nonce: 1, Index: 0, Block: par[0]})
	if _, _, ok := r2.Decode(lay); ok {
		t.Fatal("decoded from g-1 blocks")
	}
}

// cluster is stripe 0's data and parity servers on a test network.
func cluster(t *testing.T) *nodetest.Net {
	t.Helper()
	code, err := erasure.NewCode(lay.G, lay.F)
	if err != nil {
		t.Fatal(err)
	}
	cfg := msg.InitialConfig(lay)
	nodes := map[node.Addr]node.Node{}
	for m := 0; m < lay.N; m++ {
		nodes[msg.DataAddr(m)] = data.New(cfg, m)
		nodes[msg.ParityAddr(m)] = parity.New(cfg, m, code)
	}
	return nodetest.NewNet(nodes)
}

// deliverable lists the in-flight messages that may go next: unordered
// ones, and the head of each stream.
func deliverable(fl []nodetest.Envelope) []int {
	var out []int
	for i, e := range fl {
		if !e.Stream || !slices.ContainsFunc(fl[:i], func(o nodetest.Envelope) bool {
			return o.Stream && o.From == e.From && o.To == e.To
		}) {
			out = append(out, i)
		}
	}
	return out
}

// 3.3.2.3: "the snapshot protocol guarantees that the blocks the data
// servers and parity servers return have the same set of state updates
// applied to them" (the Chandy-Lamport cut), and 3.4.1: "If a data block
// retrieved by the snapshot protocol has a state update applied to it,
// then [...] any parity block retrieved must also have that state update
// applied to it." Writes run on every data server before, during and after
// the snapshot, in random interleavings; the answers must encode alike,
// each data answer must be the block as it was when the snapshot reached
// that server, and erasing any f answers must decode the erased blocks.
func TestThesis3323SnapshotIsAConsistentCut(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			n := cluster(t)
			for m := 0; m < lay.G; m++ {
				for k := 0; k < 3; k++ {
					c := uint64(10*m + k + 1)
					op := msg.Op{Kind: msg.OpWrite, Block: lay.Block(0, m), Offset: k, Data: []byte{byte(rng.Uint32())}}
					n.Inject(msg.ClientAddr(int(c)), msg.DataAddr(m), msg.Request{Client: c, Seq: 1, Ops: []msg.Op{op}})
				}
			}
			r := recovery.New(lay, 0, 1, -1)
			snapAt := rng.IntN(20)
			cut := map[int][]byte{}
			for step := 0; ; step++ {
				if step == snapAt {
					ctx := nodetest.New(probe)
					r.Ask(ctx, lay, 0)
					for _, e := range ctx.Take() {
						n.Inject(probe, e.To, e.Msg)
					}
				}
				ds := deliverable(n.InFlight())
				if len(ds) == 0 {
					if step > snapAt {
						break
					}
					continue
				}
				e, _, _ := n.Deliver(ds[rng.IntN(len(ds))])
				switch m := e.Msg.(type) {
				case msg.StripeSnapshot:
					_, pos := lay.RoleOf(0, mustMachine(t, e.To))
					cut[pos] = bytes.Clone(n.Node(e.To).(*data.Server).Block(lay.Block(0, pos)))
				case msg.SnapshotData:
					r.OnData(lay, m)
				case msg.SnapshotParity:
					r.OnParity(lay, m)
				}
			}
			if r.DGot != 1<<lay.G-1 || r.Parity[0] == nil || r.Parity[1] == nil {
				t.Fatalf("snapshot incomplete: data answers %03b, parity %v", r.DGot, r.Parity)
			}
			for pos := 0; pos < lay.G; pos++ {
				if !bytes.Equal(r.Data[pos], cut[pos]) {
					t.Fatalf("data/%d answered %x, but held %x when the snapshot reached it", pos, r.Data[pos], cut[pos])
				}
			}
			want := encode(t, r.Data)
			for k := range want {
				if !bytes.Equal(r.Parity[k], want[k]) {
					t.Fatalf("parity %d answered %x, want the encoding of the data answers %x: not one cut", k, r.Parity[k], want[k])
				}
			}
			// Rebuild: any f erased blocks decode back.
			for a := 0; a < lay.G; a++ {
				for b := a + 1; b < lay.G+lay.F; b++ {
					c := r.Clone()
					c.Data[a] = nil
					if b < lay.G {
						c.Data[b] = nil
					} else {
						c.Parity[b-lay.G] = nil
					}
					got, _, ok := c.Decode(lay)
					if !ok || !bytes.Equal(got[0][a], r.Data[a]) {
						t.Fatalf("erasing blocks %d and %d: decoded %x, %v; want %x", a, b, got, ok, r.Data[a])
					}
				}
			}
		})
	}
}

func mustMachine(t *testing.T, a node.Addr) int {
	t.Helper()
	_, m, err := msg.ParseAddr(a)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
