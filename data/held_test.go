package data

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/erasure/erasuretest"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// answerStripe0 answers s's snapshot of stripe 0 (nonce, configuration
// num) with the blocks of stripe and the parity block of parity/4.
func answerStripe0(t *testing.T, s *Server, ctx *nodetest.Ctx, num, nonce uint64, stripe [][]byte) {
	t.Helper()
	par := erasuretest.Parity(t, testLayout, stripe)
	for pos := 1; pos < 3; pos++ {
		s.Handle(ctx, msg.DataAddr(pos), msg.SnapshotData{Num: num, Stripe: 0, Nonce: nonce, Shard: pos, Block: stripe[pos], OpNum: 1, Primary: 1})
	}
	s.Handle(ctx, msg.ParityAddr(4), msg.SnapshotParity{Num: num, Stripe: 0, Nonce: nonce, Index: 1, Block: par[1]})
}

// replacedWith is a new incarnation of shard me (configuration 1) whose
// rebuild settings set chose before it started.
func replacedWith(t *testing.T, set func(*Server)) (*Server, *nodetest.Ctx) {
	t.Helper()
	s, ctx := newServer(t)
	set(s)
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Data[me], cfg.Changed = 1, 2, msg.DataAddr(me)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg, Install: &msg.Install{Shard: me}})
	return s, ctx
}

// A request for a block not yet rebuilt is held, not dropped, and runs as
// soon as the block is rebuilt, in arrival order with the other held
// requests; a client's retry of a held request is not held twice.
func TestHeldRequestRunsOnceRebuilt(t *testing.T) {
	s, ctx := newIncarnation(t)
	nonce := nodetest.Msgs[msg.StripeSnapshot](ctx.Take())[0].Nonce
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{0xa1})))
	s.Handle(ctx, client(2), request(2, 1, read(blk0)))
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{0xa1}))) // the retry
	if effs := ctx.Take(); len(nodetest.Of[msg.Prepare](effs)) != 0 || s.Held() != 2 {
		t.Fatalf("held %d, effects %v; want 2 held and nothing executed", s.Held(), effs)
	}
	stripe := [][]byte{pattern(1), pattern(2), pattern(3)}
	answerStripe0(t, s, ctx, 1, nonce, stripe)
	if s.Degraded(0) || s.Held() != 0 {
		t.Fatalf("after the rebuild: degraded %v, held %d", s.Degraded(0), s.Held())
	}
	var got []uint64
	for _, p := range nodetest.Msgs[msg.Prepare](ctx.Take()) {
		if p.Stripe == 0 && (len(got) == 0 || got[len(got)-1] != p.Client) {
			got = append(got, p.Client)
		}
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("PREPAREs from clients %v, want 1 then 2 (arrival order)", got)
	}
	want := bytes.Clone(stripe[0])
	want[0] = 0xa1
	if !bytes.Equal(s.Block(blk0), want) {
		t.Fatalf("block %x, want the rebuilt block with the held write %x", s.Block(blk0), want)
	}
}

// Held requests belong to the incarnation: a new one at the address drops
// them. A configuration that keeps the incarnation keeps them, and the
// answers of the rebuild started under the older configuration no longer
// count: the held request runs only on a block rebuilt under the new one.
func TestHeldRequestsAcrossConfigurations(t *testing.T) {
	s, ctx := newIncarnation(t)
	nonce := nodetest.Msgs[msg.StripeSnapshot](ctx.Take())[0].Nonce
	s.Handle(ctx, client(1), request(1, 1, read(blk0)))
	cfg := s.cfg
	cfg.Num, cfg.Parity[3], cfg.Changed = 2, 2, msg.ParityAddr(3)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg})
	if s.Held() != 1 {
		t.Fatalf("held %d after a parity replacement, want 1", s.Held())
	}
	ctx.Take()
	stripe := [][]byte{pattern(1), pattern(2), pattern(3)}
	answerStripe0(t, s, ctx, 1, nonce, stripe)
	if !s.Degraded(0) || s.Held() != 1 || len(nodetest.Of[msg.Reply](ctx.Take())) != 0 {
		t.Fatalf("answers of configuration 1 rebuilt the block (degraded %v, held %d)", s.Degraded(0), s.Held())
	}
	cfg.Num, cfg.Data[me], cfg.Changed = 3, 3, msg.DataAddr(me)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg, Install: &msg.Install{Shard: me}})
	if s.Held() != 0 || !s.Degraded(0) {
		t.Fatalf("a new incarnation kept %d held requests (degraded %v)", s.Held(), s.Degraded(0))
	}
}

// The background rebuild keeps its window of stripes in flight, in stripe
// order, whatever requests rebuild meanwhile: a request's stripe starts at
// once and is skipped by the background rebuild.
func TestBackgroundRebuildWindow(t *testing.T) {
	s, ctx := replacedWith(t, func(s *Server) { s.SetRebuildWindow(2) })
	stripes := func() []int {
		var out []int
		for _, q := range nodetest.Msgs[msg.StripeSnapshot](ctx.Take()) {
			if len(out) == 0 || out[len(out)-1] != q.Stripe {
				out = append(out, q.Stripe)
			}
		}
		return out
	}
	mine := testLayout.StripesAs(me, erasure.RoleData)
	if got := stripes(); len(got) != 2 || got[0] != mine[0] || got[1] != mine[1] {
		t.Fatalf("background snapshots of stripes %v, want the first two of %v", got, mine)
	}
	last := mine[len(mine)-1]
	_, pos := testLayout.RoleOf(last, me)
	s.Handle(ctx, client(1), request(1, 1, read(testLayout.Block(last, pos))))
	if got := stripes(); len(got) != 1 || got[0] != last || s.Held() != 1 {
		t.Fatalf("a request for stripe %d: snapshots of %v, held %d", last, got, s.Held())
	}
}

// heldOutsideBackground starts s's background rebuild, then has client 1
// read the block of a stripe st of s outside the background run that has
// a following stripe with the same servers, and returns st and the
// snapshots the request asked for.
func heldOutsideBackground(t *testing.T, s *Server, ctx *nodetest.Ctx) (int, []msg.StripeSnapshot) {
	t.Helper()
	bg := nodetest.Msgs[msg.StripeSnapshot](ctx.Take())
	if len(bg) == 0 {
		t.Fatal("no background snapshot")
	}
	n := testLayout.N
	for _, c := range testLayout.StripesAs(me, erasure.RoleData) {
		inBackground := slices.ContainsFunc(bg, func(q msg.StripeSnapshot) bool {
			return slices.Contains(msg.RunStripes(q.Stripe, q.Count, n), c)
		})
		if !inBackground && c+n < testLayout.Stripes {
			s.Handle(ctx, client(1), request(1, 1, read(stripeBlock(c))))
			return c, nodetest.Msgs[msg.StripeSnapshot](ctx.Take())
		}
	}
	t.Fatal("no stripe of the test layout outside the background run with a following one")
	return 0, nil
}

// stripeBlock is shard me's block of stripe st.
func stripeBlock(st int) uint64 {
	_, pos := testLayout.RoleOf(st, me)
	return testLayout.Block(st, pos)
}

// A request's run is a background run's length: its stripe and the
// following ones with the same servers; a request for a stripe of a run
// in flight waits for that run instead of starting another snapshot.
func TestHeldRequestRunCoversFollowingStripes(t *testing.T) {
	s, ctx := replacedWith(t, func(s *Server) { s.SetRebuildRun(2) })
	st, asked := heldOutsideBackground(t, s, ctx)
	n := testLayout.N
	if len(asked) == 0 || asked[0].Stripe != st || asked[0].Count != 2 {
		t.Fatalf("a request for stripe %d asked %v, want a run of stripes %d and %d", st, asked, st, st+n)
	}
	s.Handle(ctx, client(2), request(2, 1, read(stripeBlock(st+n))))
	if asked := nodetest.Msgs[msg.StripeSnapshot](ctx.Take()); len(asked) != 0 || s.Held() != 2 {
		t.Fatalf("a request for stripe %d of the run in flight asked %v (held %d), want it to wait for the run", st+n, asked, s.Held())
	}
}

// SetHeldRun sets a held request's run length apart from the background
// runs': with background runs of 2 stripes and held runs of 1, a request
// asks for its own stripe alone, and a request for the following stripe
// starts a run of its own.
func TestHeldRunSetting(t *testing.T) {
	s, ctx := replacedWith(t, func(s *Server) { s.SetRebuildRun(2); s.SetHeldRun(1) })
	st, asked := heldOutsideBackground(t, s, ctx)
	if len(asked) == 0 || asked[0].Stripe != st || len(msg.RunStripes(st, asked[0].Count, testLayout.N)) != 1 {
		t.Fatalf("a request for stripe %d asked %v, want a run of that stripe alone", st, asked)
	}
	n := testLayout.N
	s.Handle(ctx, client(2), request(2, 1, read(stripeBlock(st+n))))
	if asked := nodetest.Msgs[msg.StripeSnapshot](ctx.Take()); len(asked) == 0 || asked[0].Stripe != st+n || s.Held() != 2 {
		t.Fatalf("a request for stripe %d asked %v (held %d), want a run of its own", st+n, asked, s.Held())
	}
}

// While the server has client work its rebuild as a whole is paced: with
// a request held for a block not yet rebuilt, a rebuilt background run is
// followed by one more, whose start sets the pause timer for its stripes
// and the held request's (1 ms per stripe) that the next start waits for.
func TestBackgroundRebuildYieldsToClients(t *testing.T) {
	s, ctx := replacedWith(t, func(s *Server) { s.SetRebuildWindow(2); s.SetRebuildBusyPause(time.Millisecond) })
	var nonce uint64
	for _, q := range nodetest.Msgs[msg.StripeSnapshot](ctx.Take()) {
		if q.Stripe == 0 {
			nonce = q.Nonce
		}
	}
	mine := testLayout.StripesAs(me, erasure.RoleData)
	last := mine[len(mine)-1]
	s.Handle(ctx, client(1), request(1, 1, read(stripeBlock(last))))
	forHeld := nodetest.Msgs[msg.StripeSnapshot](ctx.Take())
	if len(forHeld) == 0 || forHeld[0].Stripe != last {
		t.Fatalf("a request for stripe %d asked %v", last, forHeld)
	}
	answerStripe0(t, s, ctx, 1, nonce, [][]byte{pattern(1), pattern(2), pattern(3)})
	if s.Degraded(0) {
		t.Fatal("stripe 0 not rebuilt")
	}
	effs := ctx.Take()
	asked := nodetest.Msgs[msg.StripeSnapshot](effs)
	if len(asked) == 0 || asked[0].Stripe == 0 || s.Held() != 1 {
		t.Fatalf("with a request held, the rebuilt run was followed by snapshots %v (held %d), want a new background run", asked, s.Held())
	}
	stripes := len(msg.RunStripes(asked[0].Stripe, asked[0].Count, testLayout.N)) + len(msg.RunStripes(last, forHeld[0].Count, testLayout.N))
	paced := false
	for _, e := range effs {
		paced = paced || e.Kind == nodetest.Timer && e.Timer == rebuildPaused && e.Min == time.Millisecond*time.Duration(stripes)
	}
	if !paced {
		t.Fatalf("the run started while busy set no pause timer of 1 ms per stripe of it and of the held request's run, %d in all (effects %v)", stripes, effs)
	}
}
