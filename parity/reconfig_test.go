package parity

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// A data server replacement's install applies, exactly once, every
// operation up to Upto that the server holds or the chain brings, and
// discards the rest (thesis 3.3.2.1 step 3).
func TestInstallAppliesUpToAndDiscardsTheRest(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(3, 3))
	s, ctx := newServer(t, 3, code)
	held1 := prepare(0, 1, 1, randDelta(rng)) // held, below Upto: apply
	held3 := prepare(0, 1, 3, randDelta(rng)) // held, above Upto: discard
	s.Handle(ctx, msg.DataAddr(1), held1)
	s.Handle(ctx, msg.DataAddr(1), held3)
	s.Handle(ctx, "reconfig", msg.StopShard{Num: 1, Shard: 1, Primary: 1})
	if got := s.Prepares(); len(got) != 2 {
		t.Fatalf("held %d prepares before install", len(got))
	}
	if f := s.Fenced(); len(f) != 1 || f[0] != msg.DataAddr(1) {
		t.Fatalf("after StopShard 1: fenced %v, want data/1", f)
	}
	// Fenced: the old primary's next PREPARE is refused.
	ctx.Take()
	s.Handle(ctx, msg.DataAddr(1), prepare(0, 1, 4, randDelta(rng)))
	if effs := ctx.Take(); len(effs) != 0 {
		t.Fatalf("fenced server acked: %v", effs)
	}
	chain2 := prepare(0, 1, 2, randDelta(rng)) // not held, in the chain: apply
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Data[1], cfg.Changed = 1, 2, msg.DataAddr(1)
	inst := &msg.Install{Shard: 1, Upto: 2, Chain: []msg.Prepare{held1, chain2}}
	before := append([]byte(nil), s.Block(0)...)
	s.Handle(ctx, "reconfig", msg.NewConfig{Config: cfg, Install: inst})
	want := append([]byte(nil), before...)
	_, idx := testLayout.RoleOf(0, 3)
	code.ApplyDelta(want, idx, held1.Pos, held1.Delta)
	code.ApplyDelta(want, idx, chain2.Pos, chain2.Delta)
	if !bytes.Equal(s.Block(0), want) {
		t.Fatalf("parity after install %x, want %x (ops 1 and 2 once, not 3)", s.Block(0), want)
	}
	if f := s.Fenced(); len(f) != 0 {
		t.Fatalf("fenced %v in the new configuration", f)
	}
	if len(s.Prepares()) != 0 || s.OpNum(1) != 0 {
		t.Fatalf("after install: %d held, op number %d; want none and 0", len(s.Prepares()), s.OpNum(1))
	}
	effs := ctx.Take()
	if len(effs) != 1 || effs[0].Msg != (msg.ConfigOK{Num: 1}) {
		t.Fatalf("install answered %v, want ConfigOK{1}", effs)
	}
	// The new primary's PREPAREs are accepted.
	p := prepare(0, 1, 1, randDelta(rng))
	p.Primary = 2
	s.Handle(ctx, msg.DataAddr(1), p)
	if effs := ctx.Take(); len(effs) != 1 {
		t.Fatalf("new primary's prepare: %v", effs)
	}
}

// A snapshot run over stripes 0 and 6 (same servers) takes one cut across
// both: its copies share the parity blocks copy-on-write, a delta
// committed after a data server's marker changes the block but not the
// copy, and a PREPARE folded into a copy (its data server's marker has not
// come) does not change the block.
func TestSnapshotRunCopyOnWrite(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(9, 9))
	s, ctx := newServer(t, 3, code) // parity 0 of stripes 0 and 6
	block := func(ps ...msg.Prepare) []byte {
		b := make([]byte, blockSize)
		for _, p := range ps {
			code.ApplyDelta(b, 0, p.Pos, p.Delta)
		}
		return b
	}
	p1, q1 := prepare(0, 1, 1, randDelta(rng)), prepare(6, 1, 2, randDelta(rng))
	for _, p := range []msg.Prepare{p1, q1} {
		s.Handle(ctx, from(p), p)
		s.Handle(ctx, from(p), commit(p))
	}
	req := msg.DataAddr(0) // data/0 rebuilds its blocks of stripes 0 and 6
	marker := func(pos int) msg.SnapshotMarker {
		return msg.SnapshotMarker{Stripe: 0, Count: 2, Nonce: 1, Requester: req, Shard: testLayout.DataMachine(0, pos)}
	}
	s.Handle(ctx, msg.DataAddr(0), marker(0))
	p3 := prepare(0, 0, 1, randDelta(rng)) // after data/0's marker: not in the cut
	p4 := prepare(0, 2, 1, randDelta(rng)) // before data/2's marker: in the cut
	s.Handle(ctx, from(p3), p3)
	s.Handle(ctx, from(p3), commit(p3))
	s.Handle(ctx, from(p4), p4)
	if !bytes.Equal(s.Block(0), block(p1, p3)) {
		t.Fatalf("parity block %x, want p1 and p3 applied (a held PREPARE folded into a copy changed it?)", s.Block(0))
	}
	ctx.Take()
	s.Handle(ctx, msg.DataAddr(1), marker(1))
	s.Handle(ctx, msg.DataAddr(2), marker(2))
	answers := nodetest.Msgs[msg.SnapshotParity](ctx.Take())
	if len(answers) != 1 || len(answers[0].Rest) != 1 {
		t.Fatalf("answers %+v, want one with two blocks", answers)
	}
	a := answers[0]
	if !bytes.Equal(a.Block, block(p1, p4)) || !bytes.Equal(a.Rest[0], block(q1)) {
		t.Fatalf("snapshot %x %x, want p1 and p4 in stripe 0, q1 in stripe 6", a.Block, a.Rest[0])
	}
	s.Handle(ctx, msg.DataAddr(2), marker(2))
	if got := nodetest.Msgs[msg.SnapshotParity](ctx.Take()); len(got) != 0 {
		t.Fatalf("a repeated marker was answered again: %+v", got)
	}
}
