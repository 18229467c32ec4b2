package witness

// Tests that follow the thesis, chapter 3, for the replication witness
// (3.3.3). Each quotes (or closely paraphrases) the rule it checks.

import (
	"testing"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

func newWitness(t *testing.T) (*Server, *nodetest.Ctx) {
	t.Helper()
	w := New(msg.InitialConfig(testLayout), 5)
	ctx := nodetest.New(msg.WitnessAddr(5))
	w.Init(ctx)
	if effs := ctx.Take(); len(effs) != 0 {
		t.Fatalf("Init had effects: %v", effs)
	}
	return w, ctx
}

// 3.3.3: witnesses "accept PREPARE messages from data servers" (Figure
// 3.6: "prepares (set[message]) — set of accepted PREPARES") and
// acknowledge them like parity servers, so that they count toward the
// commit quorum.
func TestThesis333WitnessHoldsAndAcks(t *testing.T) {
	w, ctx := newWitness(t)
	for pos := 0; pos < testLayout.G; pos++ { // stripe 0: data on machines 0, 1, 2
		p := prep(pos, pos, 1, 0)
		w.Handle(ctx, msg.DataAddr(pos), p)
		oks := nodetest.Msgs[msg.PrepareOK](ctx.Take().To(msg.DataAddr(pos)).Kind(nodetest.Stream))
		if len(oks) != 1 || oks[0].Shard != pos || oks[0].OpNum != 1 || oks[0].Inc != 1 {
			t.Fatalf("data/%d's PREPARE: acks %+v, want one PREPARE-OK streamed back", pos, oks)
		}
	}
	if len(w.Prepares()) != testLayout.G {
		t.Fatalf("holds %d PREPAREs, want %d", len(w.Prepares()), testLayout.G)
	}
}

// 3.3.1 step 3 applies to witnesses too: only "a valid PREPARE message
// (i.e. one sent by the current data server)" is accepted; witnesses hold
// PREPAREs only for stripes where they are the witness (3.3.3: "at most
// one of the data/parity/witness servers can play a role in a given
// stripe").
func TestThesis333WitnessRejectsInvalidPrepares(t *testing.T) {
	w, ctx := newWitness(t)
	stale := prep(0, 0, 1, 0)
	stale.Primary = 0
	notMine := prep(5, 0, 1, 1) // stripe 1: machine 5 holds data there
	for _, p := range []msg.Prepare{stale, notMine} {
		w.Handle(ctx, msg.DataAddr(p.Shard), p)
	}
	if effs := ctx.Take(); len(effs) != 0 || len(w.Prepares()) != 0 {
		t.Fatalf("invalid PREPAREs: effects %v, %d held", effs, len(w.Prepares()))
	}
}

// 3.3.3: "The data server only waits for acknowledgements from all parity
// servers [...] before issuing a PREPARE-DROP, which allows both parity
// and witness servers to drop the PREPARE message." Witnesses "hold no
// long-term state": a COMMIT changes nothing.
func TestThesis333WitnessDropsAndKeepsNoState(t *testing.T) {
	w, ctx := newWitness(t)
	h0 := w.Hash()
	p := prep(1, 1, 1, 0)
	w.Handle(ctx, msg.DataAddr(1), p)
	ctx.Reset()
	w.Handle(ctx, msg.DataAddr(1), msg.Commit{Shard: 1, Primary: 1, OpNum: 1, Stripe: 0})
	if len(w.Prepares()) != 1 || len(ctx.Take()) != 0 {
		t.Fatal("a COMMIT changed what the witness holds")
	}
	w.Handle(ctx, msg.DataAddr(1), msg.PrepareDrop{Shard: 1, Primary: 1, OpNum: 1, Stripe: 0})
	if len(w.Prepares()) != 0 || w.Hash() != h0 {
		t.Fatal("PREPARE-DROP did not bring the witness back to its initial state")
	}
}

// 3.3.3: witnesses "also participate in the data server replacement
// protocol; however, witness servers have no op_nums." 3.3.2.1 step 1:
// they stop accepting messages from the old data server and report their
// prepares for its shard.
func TestThesis333WitnessJoinsDataServerReplacement(t *testing.T) {
	w, ctx := newWitness(t)
	held := prep(1, 1, 4, 0)
	w.Handle(ctx, msg.DataAddr(1), held)
	w.Handle(ctx, msg.DataAddr(2), prep(2, 2, 1, 0))
	ctx.Reset()
	w.Handle(ctx, msg.ReconfigAddr, msg.StopShard{Num: 1, Shard: 1, Primary: 1})
	oks := nodetest.Msgs[msg.StopShardOK](ctx.Take().To(msg.ReconfigAddr))
	if len(oks) != 1 || oks[0].OpNum != 0 || len(oks[0].Prepares) != 1 || oks[0].Prepares[0].Key() != held.Key() {
		t.Fatalf("StopShardOK %+v, want op_num 0 and only shard 1's PREPARE", oks)
	}
	if f := w.Fenced(); len(f) != 1 || f[0] != msg.DataAddr(1) {
		t.Fatalf("after StopShard 1: fenced %v, want data/1", f)
	}
	w.Handle(ctx, msg.DataAddr(1), prep(1, 1, 5, 0))
	if effs := ctx.Take(); len(effs) != 0 || len(w.Prepares()) != 2 {
		t.Fatalf("the fenced data server's PREPARE: %v", effs)
	}
	// The new configuration drops the old data server's PREPAREs (the
	// parity servers installed them) and accepts the new one.
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Data[1], cfg.Changed = 1, 2, msg.DataAddr(1)
	w.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg, Install: &msg.Install{Shard: 1, Upto: 4}})
	if f := w.Fenced(); len(f) != 0 {
		t.Fatalf("fenced %v in the new configuration", f)
	}
	if held := w.Prepares(); len(held) != 1 || held[0].P.Shard != 2 {
		t.Fatalf("after the replacement: held %+v, want only shard 2's", held)
	}
	p := prep(1, 1, 1, 0)
	p.Primary = 2
	ctx.Reset()
	w.Handle(ctx, msg.DataAddr(1), p)
	if len(nodetest.Msgs[msg.PrepareOK](ctx.Take())) != 1 {
		t.Fatal("the new data server's PREPARE was not accepted")
	}
}

// 3.3.3: "Witnesses servers are replaced in the exact same manner as
// parity servers"; a new witness holds nothing of its predecessor's.
func TestThesis333NewWitnessStartsEmpty(t *testing.T) {
	w, ctx := newWitness(t)
	w.Handle(ctx, msg.DataAddr(0), prep(0, 0, 1, 0))
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Witness[5], cfg.Changed = 1, 2, msg.WitnessAddr(5)
	if inc, ok := (msg.NewConfig{Config: cfg}).StartsIncarnation(msg.WitnessAddr(5)); !ok || inc != 2 {
		t.Fatalf("configuration 1 starts incarnation %d, %v at witness/5; want 2", inc, ok)
	}
	ctx.Reset()
	w.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg})
	if len(w.Prepares()) != 0 || w.Incarnation() != 2 || w.ConfigNum() != 1 {
		t.Fatalf("new incarnation: %d held, incarnation %d, configuration %d", len(w.Prepares()), w.Incarnation(), w.ConfigNum())
	}
	if oks := nodetest.Msgs[msg.ConfigOK](ctx.Take()); len(oks) != 1 || oks[0].Num != 1 {
		t.Fatalf("ConfigOK %v, want configuration 1 acknowledged", oks)
	}
	ctx.Reset()
	w.Handle(ctx, msg.DataAddr(0), prep(0, 0, 2, 0))
	if oks := nodetest.Msgs[msg.PrepareOK](ctx.Take()); len(oks) != 1 || oks[0].Inc != 2 {
		t.Fatalf("acks %+v, want PREPARE-OK from incarnation 2", oks)
	}
}
