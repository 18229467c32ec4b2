package recovery_test

import (
	"bytes"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
	"github.com/amalgam-store/amalgam/recovery"
)

var l = erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 4}

func TestRebuildDecodesOnceEveryDataServerAnswered(t *testing.T) {
	data := [][]byte{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 9, 9, 9}}
	par := encode(t, data)
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
	for i := range data {
		if !bytes.Equal(gotData[i], data[i]) {
			t.Fatalf("decoded data %d = %x, want %x", i, gotData[i], data[i])
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
	par0, par1 := encode(t, data[0]), encode(t, data[1])
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
