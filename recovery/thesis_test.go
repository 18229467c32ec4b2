package recovery_test

// Tests of the data recovery protocol (3.3.2.3), the stripe snapshot.
// Those that follow the thesis, chapter 3, quote (or closely paraphrase)
// the rule they check; TestThesis3323SnapshotIsAConsistentCut drives real
// data and parity servers. The last ones check a Rebuild's decoding and
// its runs of several stripes.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/erasure/erasuretest"
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

// 3.3.2.3 step 4: "Once the recovering server has received responses from
// all servers (including itself) and at least g non-null data/parity
// blocks, it can use these blocks to decode the original stripe."
// Step 2: degraded data servers "do not send a block [...] but do send
// their current op_num", which the recovering server keeps (the version
// numbers of a rebuilt parity block).
func TestThesis3323DecodesWithEveryDataServerAndGBlocks(t *testing.T) {
	blocks := [][]byte{[]byte("block-0."), []byte("block-1."), []byte("block-2.")}
	par := erasuretest.Parity(t, lay, blocks)
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
	code := erasuretest.Code(t, lay)
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
			want := erasuretest.Parity(t, lay, r.Data)
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

// l is the layout of the Rebuild tests below (5 stripes of 4-byte blocks).
var l = erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 4}

func TestRebuildDecodesOnceEveryDataServerAnswered(t *testing.T) {
	data := [][]byte{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 9, 9, 9}}
	par := erasuretest.Parity(t, lay, data)
	const st = 2
	r := recovery.New(l, st, 7, -1)
	c := nodetest.New("parity/0")
	r.Ask(c, l, 3)
	if len(c.Effects()) != 3 {
		t.Fatalf("asked %d data servers, want 3", len(c.Effects()))
	}
	for _, e := range c.Effects() {
		if q := e.Msg.(msg.StripeSnapshot); q.Num != 3 || q.Stripe != st || q.Nonce != 7 || q.Requester != "parity/0" {
			t.Fatalf("bad request %+v", q)
		}
	}
	answer := func(pos int, b []byte) {
		r.OnData(l, msg.SnapshotData{Num: 3, Stripe: st, Nonce: 7, Shard: l.DataMachine(st, pos), Block: b, OpNum: 4, Primary: 1})
	}
	answer(0, data[0])
	answer(1, nil) // degraded
	r.OnParity(l, msg.SnapshotParity{Num: 3, Stripe: st, Nonce: 7, Index: 1, Block: par[1]})
	r.OnData(l, msg.SnapshotData{Stripe: st, Nonce: 6, Shard: l.DataMachine(st, 2), Block: data[2]}) // old nonce
	if _, _, ok := r.Decode(l); ok {
		t.Fatal("decoded before every data server answered")
	}
	c.Reset()
	r.Ask(c, l, 3)
	if len(c.Effects()) != 1 || c.Effects()[0].To != msg.DataAddr(l.DataMachine(st, 2)) {
		t.Fatalf("re-asked %v, want only the silent data server", c.Effects())
	}
	answer(2, data[2])
	checkDecode(t, r, l, data, par, "3 of 5 blocks")
	// A clone is independent and hashes alike.
	c2 := r.Clone()
	h1, h2 := node.NewHasher(), node.NewHasher()
	r.Hash(h1)
	c2.Hash(h2)
	if h1.Sum() != h2.Sum() {
		t.Fatal("clone hashes differently")
	}
}

func TestRebuildNeedsGBlocks(t *testing.T) {
	r := recovery.New(l, 0, 1, 0) // a data server rebuilding its own position 0
	r.OnData(l, msg.SnapshotData{Stripe: 0, Nonce: 1, Shard: l.DataMachine(0, 1), Block: []byte{1, 1, 1, 1}})
	r.OnData(l, msg.SnapshotData{Stripe: 0, Nonce: 1, Shard: l.DataMachine(0, 2), Block: nil})
	if _, _, ok := r.Decode(l); ok {
		t.Fatal("decoded from one block")
	}
	c := nodetest.New("parity/0")
	r.Ask(c, l, 0)
	if len(c.Effects()) != 3 {
		t.Fatalf("with every data server answered but too few blocks, re-asked %d, want all 3", len(c.Effects()))
	}
}

// checkDecode checks that r decodes to data and parity par (the first
// parity block is compared); with says what it was given.
func checkDecode(t *testing.T, r *recovery.Rebuild, l erasure.Layout, data, par [][]byte, with string) {
	t.Helper()
	runData, runPar, ok := r.Decode(l)
	if !ok {
		t.Fatalf("not decoded with %s", with)
	}
	gotData, gotPar := runData[0], runPar[0]
	onlyData, ok := r.DecodeData(l)
	if !ok {
		t.Fatalf("DecodeData: not decoded with %s", with)
	}
	for i := range data {
		if !bytes.Equal(gotData[i], data[i]) || !bytes.Equal(onlyData[0][i], data[i]) {
			t.Fatalf("decoded data %d = %x (DecodeData %x), want %x", i, gotData[i], onlyData[0][i], data[i])
		}
	}
	if !bytes.Equal(gotPar[0], par[0]) {
		t.Fatalf("decoded parity 0 = %x, want %x", gotPar[0], par[0])
	}
}

// A run of two stripes with the same servers (1 and 1+n) is asked for in
// one request per data server and decodes both stripes; an answer
// without a block for every stripe of the run does not count.
func TestRunDecodesEveryStripe(t *testing.T) {
	ll := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 10, BlockSize: 4}
	data := [][][]byte{{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 9, 9, 9}}, {{7, 7, 7, 7}, {0, 1, 0, 1}, {3, 3, 3, 3}}}
	sts := recovery.RunFrom(ll, 1, 4, func(st int) bool { return true })
	if len(sts) != 2 || sts[1] != 6 {
		t.Fatalf("run %v, want [1 6]", sts)
	}
	r := recovery.NewRun(ll, sts, 3, 0) // the data server at position 0 rebuilds
	c := nodetest.New("data/0")
	r.Ask(c, ll, 1)
	for _, e := range c.Effects() {
		if q := e.Msg.(msg.StripeSnapshot); q.Stripe != 1 || q.Count != 2 {
			t.Fatalf("request %+v, want stripe 1, count 2", q)
		}
	}
	r.OnData(ll, msg.SnapshotData{Stripe: 1, Nonce: 3, Shard: ll.DataMachine(1, 1), Block: data[0][1]})
	if r.DGot&(1<<1) != 0 {
		t.Fatal("an answer with one block counted for a run of two")
	}
	for pos := 1; pos < 3; pos++ {
		r.OnData(ll, msg.SnapshotData{Stripe: 1, Nonce: 3, Shard: ll.DataMachine(1, pos), Block: data[0][pos], Rest: [][]byte{data[1][pos]}})
	}
	par0, par1 := erasuretest.Parity(t, lay, data[0]), erasuretest.Parity(t, lay, data[1])
	r.OnParity(ll, msg.SnapshotParity{Stripe: 1, Nonce: 3, Index: 0, Block: par0[0], Rest: [][]byte{par1[0]}})
	got, gotPar, ok := r.Decode(ll)
	if !ok {
		t.Fatal("run not decoded with g blocks of each stripe")
	}
	for i := range data {
		if !bytes.Equal(got[i][0], data[i][0]) || !bytes.Equal(gotPar[i][1], [][][]byte{par0, par1}[i][1]) {
			t.Fatalf("stripe %d decoded %x (parity %x)", sts[i], got[i][0], gotPar[i][1])
		}
	}
}
