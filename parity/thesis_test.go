package parity

// Tests that follow the thesis, chapter 3, section by section, for the
// parity server. Each quotes (or closely paraphrases) the rule it checks.

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// encodeOne is what parity index k of a stripe must be when the data
// block at pos is delta and the others are zero: the encoding, computed
// from scratch.
func encodeOne(t *testing.T, code *erasure.Code, k, pos int, delta []byte) []byte {
	t.Helper()
	data := make([][]byte, testLayout.G)
	for i := range data {
		data[i] = make([]byte, blockSize)
	}
	copy(data[pos], delta)
	par, err := code.Encode(data)
	if err != nil {
		t.Fatal(err)
	}
	return par[k]
}

// 3.3.1 step 3: "The parity servers, upon receiving a valid PREPARE
// message (i.e. one sent by the current data server — see Section 3.3.2),
// add the message to their prepares and respond with a PREPARE-OK
// message."
func TestThesis331ParityHoldsAndAcksValidPrepare(t *testing.T) {
	s, ctx := newServer(t, 3, newCode(t))
	p := prepare(0, 1, 1, randDelta(rand.New(rand.NewPCG(1, 0))))
	s.Handle(ctx, from(p), p)
	effs := ctx.Take()
	oks := nodetest.Msgs[msg.PrepareOK](effs.To(from(p)).Kind(nodetest.Stream))
	if len(effs) != 1 || len(oks) != 1 || oks[0].OpNum != 1 || oks[0].Stripe != 0 || oks[0].Primary != 1 {
		t.Fatalf("effects %v, want one PREPARE-OK streamed back to %s", effs, from(p))
	}
	if held := s.Prepares(); len(held) != 1 || held[0].P.Key() != p.Key() || held[0].Applied {
		t.Fatalf("prepares %+v, want the PREPARE held, not applied", held)
	}
	old := prepare(0, 1, 2, p.Delta)
	old.Primary = 0 // not the current data server
	s.Handle(ctx, from(old), old)
	if effs := ctx.Take(); len(effs) != 0 || len(s.Prepares()) != 1 {
		t.Fatalf("PREPARE from a data server that is not current: %v", effs)
	}
}

// 3.3.1 step 4: "Once a parity server receives a COMMIT, it updates its
// local blocks with Δb (as discussed in Section 2.3) and updates the
// corresponding entry in op_nums." Section 2.3: the parity block changes
// by the data position's coefficient times the delta.
func TestThesis331CommitFoldsCoefficientTimesDelta(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(2, 0))
	for _, c := range []struct{ machine, stripe, pos, k int }{{3, 0, 1, 0}, {4, 0, 2, 1}, {3, 1, 0, 1}} {
		s, ctx := newServer(t, c.machine, code)
		p := prepare(c.stripe, c.pos, 4, randDelta(rng))
		s.Handle(ctx, from(p), p)
		if !bytes.Equal(s.Block(c.stripe), make([]byte, blockSize)) || s.OpNum(p.Shard) != 0 {
			t.Fatalf("parity/%d: the PREPARE alone changed the block or op_nums", c.machine)
		}
		s.Handle(ctx, from(p), commit(p))
		if want := encodeOne(t, code, c.k, c.pos, p.Delta); !bytes.Equal(s.Block(c.stripe), want) {
			t.Fatalf("parity/%d stripe %d: block %x, want encode(Δ at position %d)[%d] = %x",
				c.machine, c.stripe, s.Block(c.stripe), c.pos, c.k, want)
		}
		if s.OpNum(p.Shard) != 4 {
			t.Fatalf("op_nums[%d] = %d after COMMIT of op 4", p.Shard, s.OpNum(p.Shard))
		}
	}
}

// 3.3.1 step 5: "The parity servers can then discard the PREPARE (once
// they have locally committed the operation)." Decision
// (docs/protocol.md, section 7): "Applying on Drop covers a Commit that
// never arrived."
func TestThesis331DropDiscardsOnceApplied(t *testing.T) {
	code := newCode(t)
	p := prepare(0, 0, 1, randDelta(rand.New(rand.NewPCG(3, 0))))
	want := encodeOne(t, code, 0, 0, p.Delta)
	for _, withCommit := range []bool{true, false} {
		s, ctx := newServer(t, 3, code)
		s.Handle(ctx, from(p), p)
		if withCommit {
			s.Handle(ctx, from(p), commit(p))
		}
		s.Handle(ctx, from(p), drop(p))
		if len(s.Prepares()) != 0 || !bytes.Equal(s.Block(0), want) {
			t.Fatalf("commit %v: after PREPARE-DROP held %d, block %x; want none held, Δ applied once", withCommit, len(s.Prepares()), s.Block(0))
		}
	}
}

// 3.3 and 2.3: every parity block is the erasure code's encoding of its
// stripe's data blocks once the updates are committed, whatever the order
// the data servers' streams interleave in.
func TestThesis331ParityEqualsEncodingOfData(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(4, 0))
	p3, c3 := newServer(t, 3, code)
	p4, c4 := newServer(t, 4, code)
	data := [][]byte{make([]byte, blockSize), make([]byte, blockSize), make([]byte, blockSize)}
	var preps []msg.Prepare
	for op := uint64(1); op <= 6; op++ {
		pos := int(op % 3)
		nw := randDelta(rng)
		p := prepare(0, pos, op, erasure.Delta(data[pos], nw))
		data[pos] = nw
		preps = append(preps, p)
	}
	// parity/3 gets them in one order, parity/4 in another; each
	// stream is FIFO, so a shard's own ops keep their order.
	for _, p := range preps {
		p3.Handle(c3, from(p), p)
		p3.Handle(c3, from(p), commit(p))
	}
	for _, pos := range []int{2, 0, 1} {
		for _, p := range preps {
			if p.Pos == pos {
				p4.Handle(c4, from(p), p)
				p4.Handle(c4, from(p), commit(p))
			}
		}
	}
	want, err := code.Encode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p3.Block(0), want[0]) || !bytes.Equal(p4.Block(0), want[1]) {
		t.Fatalf("parity blocks %x, %x; want encode(data) = %x, %x", p3.Block(0), p4.Block(0), want[0], want[1])
	}
}

// 3.3.2.1 step 1: "The reconfiguration service first requests that the
// parity servers no longer accept messages from the old data server and
// send the reconfiguration service their local set of prepares for the
// data server's shard." With them goes the op_num it applied (tau's input).
func TestThesis3321StopShardFencesAndReports(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(5, 0))
	s, ctx := newServer(t, 3, code)
	p1, p2 := prepare(0, 1, 1, randDelta(rng)), prepare(0, 1, 2, randDelta(rng))
	other := prepare(0, 2, 1, randDelta(rng)) // another shard
	for _, p := range []msg.Prepare{p1, p2, other} {
		s.Handle(ctx, from(p), p)
	}
	s.Handle(ctx, from(p1), commit(p1))
	ctx.Reset()
	s.Handle(ctx, msg.ReconfigAddr, msg.StopShard{Num: 1, Shard: 1, Primary: 1})
	oks := nodetest.Msgs[msg.StopShardOK](ctx.Take().To(msg.ReconfigAddr))
	if len(oks) != 1 || oks[0].OpNum != 1 || len(oks[0].Prepares) != 2 ||
		oks[0].Prepares[0].Key() != p1.Key() || oks[0].Prepares[1].Key() != p2.Key() {
		t.Fatalf("StopShardOK %+v, want op_num 1 and shard 1's two PREPAREs", oks)
	}
	block := bytes.Clone(s.Block(0))
	p3 := prepare(0, 1, 3, randDelta(rng))
	s.Handle(ctx, from(p3), p3)
	s.Handle(ctx, from(p2), commit(p2))
	if effs := ctx.Take(); len(effs) != 0 || !bytes.Equal(s.Block(0), block) {
		t.Fatalf("the fenced data server was heard: %v", effs)
	}
	// Other shards carry on.
	s.Handle(ctx, from(other), commit(other))
	if bytes.Equal(s.Block(0), block) {
		t.Fatal("shard 2's commit was refused too")
	}
}

// 3.3.2.1 step 3: "Parity servers processing a data server replacement
// first execute all operations up to the largest in P which apply to
// their parity blocks, using either their local prepares or the PREPAREs
// sent by the reconfiguration service, and reset their entry in op_nums
// for that shard to 0. They also update their local data server ID for
// that shard and clear their prepares of any PREPARE messages for the
// replaced data server's shard."
func TestThesis3321InstallExecutesChainAndResets(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(6, 0))
	s, ctx := newServer(t, 3, code)
	held1, held2 := prepare(0, 0, 1, randDelta(rng)), prepare(0, 0, 2, randDelta(rng))
	beyond := prepare(0, 0, 4, randDelta(rng))
	for _, p := range []msg.Prepare{held1, held2, beyond} {
		s.Handle(ctx, from(p), p)
	}
	s.Handle(ctx, from(held1), commit(held1))
	s.Handle(ctx, msg.ReconfigAddr, msg.StopShard{Num: 1, Shard: 0, Primary: 1})
	sent3 := prepare(0, 0, 3, randDelta(rng)) // only the service has it
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Data[0], cfg.Changed = 1, 2, msg.DataAddr(0)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg, Install: &msg.Install{Shard: 0, Upto: 3, Chain: []msg.Prepare{sent3}}})
	want := make([]byte, blockSize)
	for _, p := range []msg.Prepare{held1, held2, sent3} {
		erasure.XORInto(want, encodeOne(t, code, 0, 0, p.Delta))
	}
	if !bytes.Equal(s.Block(0), want) {
		t.Fatalf("block %x, want ops 1, 2, 3 each applied once and op 4 not: %x", s.Block(0), want)
	}
	if s.OpNum(0) != 0 || len(s.Prepares()) != 0 || s.PrimaryOf(0) != 2 {
		t.Fatalf("op_nums[0] = %d, %d held, data server ID %d; want 0, none, 2", s.OpNum(0), len(s.Prepares()), s.PrimaryOf(0))
	}
	ctx.Reset()
	fresh := prepare(0, 0, 1, randDelta(rng))
	fresh.Primary = 2
	s.Handle(ctx, from(fresh), fresh)
	if len(nodetest.Msgs[msg.PrepareOK](ctx.Take())) != 1 {
		t.Fatal("the new data server's PREPARE was not accepted")
	}
}

// 3.3.2.3 step 3: "The first time a parity server receives a
// STRIPE-SNAPSHOT message with nonce v, it makes a local copy of its
// parity block for the stripe. It applies any pending PREPARE messages to
// this copy. The parity server waits until it has received a matching
// STRIPE-SNAPSHOT message from all data servers, updating the copy of the
// parity block with state updates from PREPARE messages it receives from
// data servers from which the parity server has not yet received a
// matching STRIPE-SNAPSHOT message. [...] it sends this copy of the parity
// block to the recovering server." (The data servers forward the snapshot
// as a marker on their streams, as in Chandy-Lamport.)
func TestThesis3323MarkersCutTheParityBlock(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(7, 0))
	s, ctx := newServer(t, 3, code)
	committed := prepare(0, 0, 1, randDelta(rng))
	pending := prepare(0, 1, 1, randDelta(rng))
	s.Handle(ctx, from(committed), committed)
	s.Handle(ctx, from(committed), commit(committed))
	s.Handle(ctx, from(pending), pending)
	const req = "data/9"
	marker := func(pos int) msg.SnapshotMarker {
		return msg.SnapshotMarker{Num: 0, Stripe: 0, Nonce: 5, Requester: req, Shard: testLayout.DataMachine(0, pos)}
	}
	s.Handle(ctx, msg.DataAddr(0), marker(0))
	before := prepare(0, 2, 1, randDelta(rng)) // position 2's marker has not come: in the copy
	after := prepare(0, 0, 2, randDelta(rng))  // position 0's marker has come: not in the copy
	s.Handle(ctx, from(before), before)
	s.Handle(ctx, from(after), after)
	s.Handle(ctx, msg.DataAddr(1), marker(1))
	if len(nodetest.Msgs[msg.SnapshotParity](ctx.Take())) != 0 {
		t.Fatal("answered before every data server's marker")
	}
	s.Handle(ctx, msg.DataAddr(2), marker(2))
	answers := nodetest.Msgs[msg.SnapshotParity](ctx.Take().To(req))
	if len(answers) != 1 {
		t.Fatalf("answers %v, want one to %s", answers, req)
	}
	want := make([]byte, blockSize)
	for _, p := range []msg.Prepare{committed, pending, before} {
		erasure.XORInto(want, encodeOne(t, code, 0, p.Pos, p.Delta))
	}
	if a := answers[0]; a.Index != 0 || a.Nonce != 5 || !bytes.Equal(a.Block, want) {
		t.Fatalf("snapshot copy %x, want the committed, the pending and position 2's later update, not position 0's: %x", a.Block, want)
	}
}

// freshParity3 starts incarnation 2 of parity/3 (configuration 1), which
// starts degraded.
func freshParity3(t *testing.T, code *erasure.Code) (*Server, *nodetest.Ctx) {
	t.Helper()
	s, ctx := newServer(t, 3, code)
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Parity[3], cfg.Changed = 1, 2, msg.ParityAddr(3)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg})
	return s, ctx
}

// 3.3.2.3 step 3: "A degraded parity server that has not yet rebuilt the
// stripe waits for STRIPE-SNAPSHOT messages from all data servers and then
// sends a null response to the recovering server."
func TestThesis3323DegradedParityAnswersNull(t *testing.T) {
	s, ctx := freshParity3(t, newCode(t))
	if !s.Degraded(1) {
		t.Fatal("a new parity server's stripe 1 is not degraded")
	}
	ctx.Reset()
	var answers []msg.SnapshotParity
	for pos := 0; pos < testLayout.G; pos++ {
		if len(answers) != 0 {
			t.Fatalf("answered after %d of %d markers", pos, testLayout.G)
		}
		m := testLayout.DataMachine(1, pos)
		s.Handle(ctx, msg.DataAddr(m), msg.SnapshotMarker{Num: 1, Stripe: 1, Nonce: 3, Requester: "data/9", Shard: m})
		answers = nodetest.Msgs[msg.SnapshotParity](ctx.Take())
	}
	if len(answers) != 1 || answers[0].Block != nil {
		t.Fatalf("answers %+v, want one null response", answers)
	}
}

// 3.3.2.2: new parity servers "do not need to recover parity blocks before
// participating in the replication protocol; they can instead store
// committed operations until they have recovered the relevant blocks".
// 3.3.2.3: "parity servers do not execute operations for this stripe with
// op_nums smaller than the ones received during data recovery"; the
// snapshot's op_nums "serve as temporary version numbers for a recovered
// parity block".
func TestThesis3322NewParityKeepsCommitsUntilRebuilt(t *testing.T) {
	code := newCode(t)
	for _, reflected := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(8, 0))
		s, ctx := freshParity3(t, code)
		asks := nodetest.Msgs[msg.StripeSnapshot](ctx.Take())
		if len(asks) != testLayout.G || asks[0].Stripe != 0 || asks[0].Requester != msg.ParityAddr(3) {
			t.Fatalf("rebuild asked %+v, want STRIPE-SNAPSHOT of stripe 0 to its 3 data servers", asks)
		}
		nonce := asks[0].Nonce
		data := [][]byte{randDelta(rng), randDelta(rng), randDelta(rng)}
		op := prepare(0, 0, 1, randDelta(rng))
		marker := func(pos int) {
			s.Handle(ctx, msg.DataAddr(pos), msg.SnapshotMarker{Num: 1, Stripe: 0, Nonce: nonce, Requester: msg.ParityAddr(3), Shard: pos})
		}
		if !reflected {
			marker(0) // data/0's cut comes before op 1
		}
		s.Handle(ctx, from(op), op)
		if len(nodetest.Msgs[msg.PrepareOK](ctx.Take())) != 1 {
			t.Fatal("a degraded parity server did not take part in the commit")
		}
		s.Handle(ctx, from(op), commit(op))
		if !s.Degraded(0) {
			t.Fatal("not degraded any more before the rebuild")
		}
		snapOpNum := uint64(1)
		if reflected {
			marker(0)
			erasure.XORInto(data[0], op.Delta) // data/0's block has op 1
			snapOpNum = 2
		}
		marker(1)
		marker(2)
		for pos := 0; pos < testLayout.G; pos++ {
			n := uint64(1)
			if pos == 0 {
				n = snapOpNum
			}
			s.Handle(ctx, msg.DataAddr(pos), msg.SnapshotData{Num: 1, Stripe: 0, Nonce: nonce, Shard: pos, Block: data[pos], OpNum: n, Primary: 1})
		}
		if s.Degraded(0) {
			t.Fatalf("reflected %v: stripe 0 not rebuilt with every data block", reflected)
		}
		final := data
		if !reflected {
			final = [][]byte{bytes.Clone(data[0]), data[1], data[2]}
			erasure.XORInto(final[0], op.Delta)
		}
		want, err := code.Encode(final)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(s.Block(0), want[0]) {
			t.Fatalf("reflected %v: rebuilt block %x, want %x (op 1 exactly once)", reflected, s.Block(0), want[0])
		}
	}
}

// 3.3.2.3: "parity servers do not accept snapshot requests from data
// servers not in their current configuration."
func TestThesis3323MarkerOfOlderConfigurationIgnored(t *testing.T) {
	s, ctx := newServer(t, 3, newCode(t))
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Witness[5], cfg.Changed = 1, 2, msg.WitnessAddr(5)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg})
	ctx.Reset()
	h := s.Hash()
	for pos := 0; pos < testLayout.G; pos++ {
		s.Handle(ctx, msg.DataAddr(pos), msg.SnapshotMarker{Num: 0, Stripe: 0, Nonce: 1, Requester: "data/9", Shard: pos})
	}
	if effs := ctx.Take(); len(effs) != 0 || s.Hash() != h {
		t.Fatalf("markers of configuration 0 in configuration 1: %v", effs)
	}
}

// 3.3.2.3: "Recovering parity servers retain the op_nums from the
// STRIPE-SNAPSHOT messages until their local op_nums are at least as
// large; parity servers do not execute operations for this stripe with
// op_nums smaller than the ones received during data recovery. Instead,
// they simply drop them." Here the PREPARE of an operation the rebuilt
// block reflects arrives after the rebuild, as when a data server re-sends
// its pending_ops to a new parity server (3.3.2.2) on its retry timer
// because the first copies were lost with the stream to the predecessor.
func TestThesis3323PrepareReflectedByTheRebuildIsNotAppliedAgain(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(9, 0))
	s, ctx := freshParity3(t, code)
	asks := nodetest.Msgs[msg.StripeSnapshot](ctx.Take())
	if len(asks) == 0 || asks[0].Stripe != 0 {
		t.Fatalf("rebuild asked %+v, want stripe 0 first", asks)
	}
	nonce := asks[0].Nonce
	// Op 1 of shard 1 (position 1 of stripe 0) committed without
	// parity/3: data/1's block has it and its snapshot op_num is 2.
	op := prepare(0, 1, 1, randDelta(rng))
	blocks := [][]byte{randDelta(rng), bytes.Clone(op.Delta), randDelta(rng)}
	for pos := 0; pos < testLayout.G; pos++ {
		s.Handle(ctx, msg.DataAddr(pos), msg.SnapshotMarker{Num: 1, Stripe: 0, Nonce: nonce, Requester: msg.ParityAddr(3), Shard: pos})
		n := uint64(1)
		if pos == 1 {
			n = 2
		}
		s.Handle(ctx, msg.DataAddr(pos), msg.SnapshotData{Num: 1, Stripe: 0, Nonce: nonce, Shard: pos, Block: blocks[pos], OpNum: n, Primary: 1})
	}
	want, err := code.Encode(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if s.Degraded(0) || !bytes.Equal(s.Block(0), want[0]) {
		t.Fatalf("rebuild: degraded %v, block %x; want %x", s.Degraded(0), s.Block(0), want[0])
	}
	// The re-sent PREPARE, then its PREPARE-DROP (op 1 committed long ago).
	s.Handle(ctx, from(op), op)
	s.Handle(ctx, from(op), drop(op))
	if !bytes.Equal(s.Block(0), want[0]) {
		t.Fatalf("thesis 3.3.2.3 violated: parity servers must not execute operations with op_nums smaller than "+
			"the snapshot's; op 1 of shard 1 (snapshot op_num 2) re-sent after the rebuild was applied again: "+
			"parity block %x, want %x (the encoding of the data blocks)", s.Block(0), want[0])
	}
}
