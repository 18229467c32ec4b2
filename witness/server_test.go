package witness

import (
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// n=6, g=3, f=2, w=1: machine 5 is the witness of stripes 0 and 6 (data
// on machines 0, 1, 2) and data or parity in the others.
var testLayout = erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 12, BlockSize: 8}

func prep(shard, pos int, opNum uint64, stripe int) msg.Prepare {
	return msg.Prepare{Shard: shard, Primary: 1, OpNum: opNum, Stripe: stripe, Pos: pos,
		Delta: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Stripes: []int{stripe}}
}

func TestWitnessHoldsAcksDrops(t *testing.T) {
	w := New(msg.InitialConfig(testLayout), 5)
	ctx := nodetest.New(msg.WitnessAddr(5))
	w.Init(ctx)
	h0 := w.Hash()

	p := prep(1, 1, 1, 0)
	w.Handle(ctx, msg.DataAddr(1), p)
	effs := ctx.Take()
	want := msg.PrepareOK{Shard: 1, Primary: 1, OpNum: 1, Stripe: 0, Inc: 1}
	if len(effs) != 1 || effs[0].Kind != "stream" || effs[0].To != msg.DataAddr(1) || effs[0].Msg != want {
		t.Fatalf("effects %v, want %+v streamed to data/1", effs, want)
	}
	if held := w.Prepares(); len(held) != 1 || held[0].P.Key() != p.Key() || !w.HoldsOn(0) {
		t.Fatalf("held %+v", held)
	}
	h1 := w.Hash()
	if h1 == h0 {
		t.Fatal("holding a prepare did not change the hash")
	}

	// Clone independence.
	c := w.Clone().(*Server)
	if c.Hash() != h1 {
		t.Fatal("clone hashes differently")
	}

	// A stale drop is ignored; a current one discards the prepare.
	w.Handle(ctx, msg.DataAddr(1), msg.PrepareDrop{Shard: 1, Primary: 0, OpNum: 1, Stripe: 0})
	if len(w.Prepares()) != 1 {
		t.Fatal("drop from a stale primary discarded the prepare")
	}
	w.Handle(ctx, msg.DataAddr(1), msg.PrepareDrop{Shard: 1, Primary: 1, OpNum: 1, Stripe: 0})
	if len(w.Prepares()) != 0 || w.HoldsOn(0) || w.Hash() != h0 {
		t.Fatal("drop did not discard the prepare")
	}
	if c.Hash() != h1 || len(c.Prepares()) != 1 {
		t.Fatal("the drop reached the clone")
	}
	// Commits mean nothing to a witness; malformed drops are ignored.
	w.Handle(ctx, msg.DataAddr(1), msg.Commit{Shard: 1, Primary: 1, OpNum: 1, Stripe: 0})
	w.Handle(ctx, msg.DataAddr(1), msg.PrepareDrop{Shard: 99, Primary: 1, OpNum: 1, Stripe: 0})
	if len(ctx.Take()) != 0 || w.Hash() != h0 {
		t.Fatal("commit or malformed drop had an effect")
	}
}

func TestWitnessHoldsFuturePrimary(t *testing.T) {
	// A primary of a configuration the witness has not seen: not accepted,
	// held until the configuration arrives, which it asks for.
	w := New(msg.InitialConfig(testLayout), 5)
	ctx := nodetest.New(msg.WitnessAddr(5))
	p := prep(0, 0, 1, 0)
	p.Primary = 2
	w.Handle(ctx, msg.DataAddr(0), p)
	effs := ctx.Take()
	if len(effs) != 1 || len(w.Prepares()) != 0 {
		t.Fatalf("future prepare: effects %v, %d held", effs, len(w.Prepares()))
	}
	if c, ok := effs[0].Msg.(msg.ConfigOK); !ok || c.Num != 0 || effs[0].To != msg.ReconfigAddr {
		t.Fatalf("future prepare: effect %+v, want ConfigOK{0} to reconfig", effs[0])
	}
}

func TestWitnessRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    msg.Prepare
	}{
		{"old primary", func() msg.Prepare { p := prep(0, 0, 1, 0); p.Primary = 0; return p }()},
		{"not witness of the stripe", prep(2, 1, 1, 1)},
		{"shard out of range", prep(6, 0, 1, 0)},
		{"stripe out of range", prep(0, 0, 1, 12)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := New(msg.InitialConfig(testLayout), 5)
			ctx := nodetest.New(msg.WitnessAddr(5))
			h := w.Hash()
			w.Handle(ctx, msg.DataAddr(0), tc.p)
			if len(ctx.Take()) != 0 || len(w.Prepares()) != 0 || w.Hash() != h {
				t.Fatalf("witness accepted %+v", tc.p)
			}
		})
	}
}
