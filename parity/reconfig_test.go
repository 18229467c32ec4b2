package parity

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/amalgam-store/amalgam/msg"
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
