package data

// Tests that follow the thesis, chapter 3, section by section, for the
// data server. Each quotes (or closely paraphrases) the rule it checks.

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/erasure/erasuretest"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/witness"
)

// 3.3.1 step 2: "The data server computes the new value of the block, b'.
// It updates its local state, blocks, with the value b' and then
// calculates the state update for the block Δb = b' - b. [...] assigns a
// new operation number [...] and sends <PREPARE, Δb, op_num, primary_num>
// to the parity servers for the block's stripe." (Footnote 3: subtraction
// is XOR.)
func TestThesis331DataServerPreparesXORDelta(t *testing.T) {
	s, ctx := newServer(t)
	old := pattern(9)
	s.blocks.Put(blk0, bytes.Clone(old))
	for i, data := range [][]byte{{0xaa, 0xbb}, {0x01}} {
		s.Handle(ctx, client(1), request(1, uint64(i+1), write(blk0, 2, data)))
		nw := bytes.Clone(old)
		copy(nw[2:], data)
		if !bytes.Equal(s.Block(blk0), nw) {
			t.Fatalf("op %d: block %x, want b' = %x before any PREPARE-OK", i+1, s.Block(blk0), nw)
		}
		effs := ctx.Take()
		preps := nodetest.Msgs[msg.Prepare](effs)
		if got := nodetest.Of[msg.Prepare](effs).Kind(nodetest.Stream).Addrs(); !slices.Equal(got, backups(0)) {
			t.Fatalf("op %d: PREPARE streamed to %v, want the stripe's parity servers then witness %v", i+1, got, backups(0))
		}
		for _, p := range preps {
			if p.OpNum != uint64(i+1) || p.Primary != primary || !bytes.Equal(p.Delta, erasure.Delta(old, nw)) {
				t.Fatalf("op %d: PREPARE %+v, want op_num %d, primary_num %d, Δb = b XOR b' = %x",
					i+1, p, i+1, primary, erasure.Delta(old, nw))
			}
		}
		if s.PendingOps() != i+1 {
			t.Fatalf("op %d: pending_ops holds %d, want every op not yet dropped", i+1, s.PendingOps())
		}
		old = nw
	}
}

// 3.3.1 step 4: "The data server waits for f PREPARE-OKs. Once these are
// received [...] the data server considers Δb committed [...] replies to
// client c with the cached results of the operation. The data server also
// sends <COMMIT, op_num> to the parity servers."
func TestThesis331CommitsAfterFAcks(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(4), request(4, 1, write(blk0, 0, []byte{7})))
	ctx.Reset()
	for k := 0; k < testLayout.F-1; k++ {
		ack(s, ctx, parities(0)[k], 1, 0)
	}
	if effs := ctx.Take(); len(effs) != 0 {
		t.Fatalf("with f-1 = %d PREPARE-OKs: %v, want nothing", testLayout.F-1, effs)
	}
	ack(s, ctx, parities(0)[testLayout.F-1], 1, 0)
	effs := ctx.Take()
	replies := nodetest.Of[msg.Reply](effs)
	if len(replies) != 1 || replies[0].To != client(4) || replies[0].Kind != nodetest.Send {
		t.Fatalf("at f PREPARE-OKs: replies %v, want one to %s", replies, client(4))
	}
	if r := replies[0].Msg.(msg.Reply); r.Seq != 1 || r.Err != "" || len(r.Outcome.Results) != 1 {
		t.Fatalf("reply %+v, want the cached result of seq 1", r)
	}
	if got := nodetest.Of[msg.Commit](effs).Addrs(); !slices.Equal(got, parities(0)) {
		t.Fatalf("COMMIT to %v, want the parity servers %v (not the witness)", got, parities(0))
	}
}

// 3.3.1 step 4: "Once these are received and all previous operations in
// pending_ops (ordered by op_num) are committed, the data server considers
// Δb committed."
func TestThesis331CommitsInOpNumOrder(t *testing.T) {
	s, ctx := newServer(t)
	for c := uint64(1); c <= 3; c++ {
		s.Handle(ctx, client(c), request(c, 1, write(blk1, int(c), []byte{byte(c)})))
	}
	ctx.Reset()
	// Ops 3 then 2 reach f acks; op 1 has none: nothing commits.
	for _, op := range []uint64{3, 2} {
		for _, b := range parities(1) {
			ack(s, ctx, b, op, 1)
		}
	}
	if got := nodetest.Of[msg.Reply](ctx.Take()); len(got) != 0 {
		t.Fatalf("ops 2 and 3 answered before op 1 committed: %v", got)
	}
	ack(s, ctx, parities(1)[0], 1, 1)
	ack(s, ctx, backups(1)[2], 1, 1)
	effs := ctx.Take()
	if got := nodetest.Of[msg.Reply](effs).Addrs(); !slices.Equal(got, []node.Addr{client(1), client(2), client(3)}) {
		t.Fatalf("replies to %v, want clients 1, 2, 3 in op_num order", got)
	}
	var order []uint64
	for _, c := range nodetest.Msgs[msg.Commit](nodetest.Of[msg.Commit](effs).To(parities(1)[0])) {
		order = append(order, c.OpNum)
	}
	if !slices.Equal(order, []uint64{1, 2, 3}) {
		t.Fatalf("COMMITs on the stream to %s: op_nums %v, want 1, 2, 3", parities(1)[0], order)
	}
}

// 3.3.1 step 5: "Once a PREPARE-OK has been acknowledged by all parity
// servers for the stripe, the data server additionally sends a
// PREPARE-DROP [...] The data server also discards the operation from its
// pending_ops." 3.3.3: "The data server only waits for acknowledgements
// from all parity servers (and not all parity and witness servers) before
// issuing a PREPARE-DROP, which allows both parity and witness servers to
// drop the PREPARE message."
func TestThesis331DropsOnceEveryParityServerAcked(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	ctx.Reset()
	ack(s, ctx, backups(0)[2], 1, 0) // the witness
	ack(s, ctx, parities(0)[0], 1, 0)
	if drops := nodetest.Of[msg.PrepareDrop](ctx.Take()); len(drops) != 0 || s.PendingOps() != 1 {
		t.Fatalf("dropped with one parity server of two: %v", drops)
	}
	ack(s, ctx, parities(0)[1], 1, 0)
	if got := nodetest.Of[msg.PrepareDrop](ctx.Take()).Kind(nodetest.Stream).Addrs(); !slices.Equal(got, backups(0)) {
		t.Fatalf("PREPARE-DROP to %v, want parity servers and witness %v", got, backups(0))
	}
	if s.PendingOps() != 0 {
		t.Fatalf("pending_ops holds %d after the drop", s.PendingOps())
	}
}

// 3.3.3: witnesses "accept PREPARE messages from data servers" and their
// acknowledgements count: a write commits with f PREPARE-OKs from "parity
// (or witness) servers" (3.3.4).
func TestThesis333WitnessAcksCountTowardCommit(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	ctx.Reset()
	ack(s, ctx, backups(0)[2], 1, 0) // witness/5
	ack(s, ctx, parities(0)[1], 1, 0)
	if got := nodetest.Of[msg.Reply](ctx.Take()); len(got) != 1 {
		t.Fatalf("one witness and one parity ack (f=2): replies %v, want the commit", got)
	}
}

// 3.3.4: "The operation is given a single op_num, but each parity server
// only receives the state updates for its own parity blocks. The data
// server only considers the entire operation committed once all of the
// state updates are committed." PREPAREs "are marked with metadata showing
// which blocks are modified."
func TestThesis334MultiBlockOperation(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1}), write(blk1, 0, []byte{2})))
	effs := ctx.Take()
	for _, st := range []int{0, 1} {
		want := make([]byte, blockSize)
		want[0] = byte(st + 1)
		for _, e := range nodetest.Of[msg.Prepare](effs) {
			p := e.Msg.(msg.Prepare)
			if p.OpNum != 1 || !slices.Equal(p.Stripes, []int{0, 1}) {
				t.Fatalf("PREPARE %+v: want the single op_num 1 and stripes [0 1]", p)
			}
			if p.Stripe == st && (!slices.Contains(backups(st), e.To) || !bytes.Equal(p.Delta, want)) {
				t.Fatalf("stripe %d's update went to %s with Δ %x; want only its backups, Δ %x", st, e.To, p.Delta, want)
			}
		}
	}
	for _, b := range backups(0) {
		ack(s, ctx, b, 1, 0)
	}
	if got := nodetest.Of[msg.Reply](ctx.Take()); len(got) != 0 {
		t.Fatalf("committed with stripe 1's update unacknowledged: %v", got)
	}
	for _, b := range parities(1) {
		ack(s, ctx, b, 1, 1)
	}
	if got := nodetest.Of[msg.Reply](ctx.Take()); len(got) != 1 {
		t.Fatalf("every update acknowledged: replies %v, want one", got)
	}
}

// replaceParity3 runs a parity/3 replacement at the data server: StopBackup
// for configuration 1, then configuration 1 with parity/3's incarnation 2.
func replaceParity3(s *Server, ctx *nodetest.Ctx) {
	s.Handle(ctx, msg.ReconfigAddr, msg.StopBackup{Num: 1, Role: erasure.RoleParity, Machine: 3, Inc: 1})
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Parity[3], cfg.Changed = 1, 2, msg.ParityAddr(3)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg})
}

// Fenced lists the backups stopped for a replacement, until the next
// configuration (amalgam-server's readiness reports them).
func TestFencedUntilNextConfig(t *testing.T) {
	s, ctx := newServer(t)
	if f := s.Fenced(); len(f) != 0 {
		t.Fatalf("fenced %v before any replacement", f)
	}
	s.Handle(ctx, msg.ReconfigAddr, msg.StopBackup{Num: 1, Role: erasure.RoleParity, Machine: 3, Inc: 1})
	if f := s.Fenced(); !slices.Equal(f, []node.Addr{msg.ParityAddr(3)}) {
		t.Fatalf("after StopBackup of parity/3: fenced %v", f)
	}
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Parity[3], cfg.Changed = 1, 2, msg.ParityAddr(3)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg})
	if f := s.Fenced(); len(f) != 0 {
		t.Fatalf("fenced %v in the configuration that replaced parity/3", f)
	}
}

// 3.3.2.2: "Once all data servers agree to ignore future and locally
// cached PREPARE-OKs from the old parity server, a replacement parity
// server is initialized."
func TestThesis3322StopBackupIgnoresCachedAndFutureAcks(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	ack(s, ctx, msg.ParityAddr(3), 1, 0) // cached, then forgotten
	s.Handle(ctx, msg.ReconfigAddr, msg.StopBackup{Num: 1, Role: erasure.RoleParity, Machine: 3, Inc: 1})
	effs := ctx.Take()
	if oks := nodetest.Msgs[msg.StopBackupOK](effs); len(oks) != 1 || oks[0].Machine != 3 {
		t.Fatalf("StopBackup answered %v", effs)
	}
	ack(s, ctx, msg.ParityAddr(3), 1, 0) // future
	ack(s, ctx, msg.ParityAddr(4), 1, 0)
	if got := nodetest.Of[msg.Reply](ctx.Take()); len(got) != 0 {
		t.Fatalf("committed counting the stopped parity server: %v", got)
	}
	ack(s, ctx, backups(0)[2], 1, 0)
	if got := nodetest.Of[msg.Reply](ctx.Take()); len(got) != 1 {
		t.Fatalf("parity/4 and the witness acked: replies %v, want the commit", got)
	}
}

// 3.3.2.2: "Data servers must first send new parity servers PREPARE
// messages for all operations in their pending_ops in op_num order before
// sending any other messages."
func TestThesis3322PendingOpsResentInOrderToNewParity(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	s.Handle(ctx, client(2), request(2, 1, write(blk1, 0, []byte{2})))
	s.Handle(ctx, client(3), request(3, 1, write(blk0, 1, []byte{3})))
	ack(s, ctx, msg.ParityAddr(3), 1, 0)
	ack(s, ctx, msg.ParityAddr(3), 2, 1)
	ctx.Reset()
	replaceParity3(s, ctx)
	toNew := ctx.Take().To(msg.ParityAddr(3))
	var order []uint64
	for _, e := range toNew {
		p, ok := e.Msg.(msg.Prepare)
		if !ok || e.Kind != nodetest.Stream {
			t.Fatalf("to the new parity server: %v, want only streamed PREPAREs", toNew)
		}
		order = append(order, p.OpNum)
	}
	if !slices.Equal(order, []uint64{1, 2, 3}) {
		t.Fatalf("PREPAREs re-sent with op_nums %v, want all of pending_ops in order 1, 2, 3", order)
	}
	// The new incarnation's acknowledgements count; the old one's do not.
	s.Handle(ctx, msg.ParityAddr(3), msg.PrepareOK{Shard: me, Primary: primary, OpNum: 1, Stripe: 0, Inc: 1})
	ack(s, ctx, msg.ParityAddr(4), 1, 0)
	if got := nodetest.Of[msg.Reply](ctx.Take()); len(got) != 0 {
		t.Fatalf("an ack of the replaced incarnation counted: %v", got)
	}
	s.Handle(ctx, msg.ParityAddr(3), msg.PrepareOK{Shard: me, Primary: primary, OpNum: 1, Stripe: 0, Inc: 2})
	if got := nodetest.Of[msg.Reply](ctx.Take()); len(got) != 1 {
		t.Fatalf("the new incarnation's ack: replies %v, want op 1 committed", got)
	}
}

// newIncarnation starts incarnation 2 of data/0 (configuration 1) with the
// client records the replacement recovered.
func newIncarnation(t *testing.T, clients ...msg.ClientRecord) (*Server, *nodetest.Ctx) {
	t.Helper()
	s, ctx := newServer(t)
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Data[me], cfg.Changed = 1, 2, msg.DataAddr(me)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg, Install: &msg.Install{Shard: me, Clients: clients}})
	return s, ctx
}

// 3.3.2.1: "the newly initialized data server contains no data — it is
// initialized in a degraded state. [...] In order to process operations,
// the data server must first recover the blocks the operation reads and
// writes". 3.3: "Client table information would be replicated and
// recovered as a part of the replication and server replacement
// protocols."
func TestThesis3321NewDataServerStartsDegraded(t *testing.T) {
	rec := msg.ClientRecord{Client: 7, Seq: 3, Reply: msg.Reply{Seq: 3, Outcome: msg.Outcome{Results: []msg.Result{{Value: 42}}}}}
	s, ctx := newIncarnation(t, rec)
	for _, st := range testLayout.StripesAs(me, erasure.RoleData) {
		if !s.Degraded(st) {
			t.Fatalf("stripe %d not degraded in a new incarnation", st)
		}
	}
	ctx.Reset()
	s.Handle(ctx, client(1), request(1, 1, write(blk1, 0, []byte{1})))
	effs := ctx.Take()
	if len(nodetest.Of[msg.Prepare](effs))+len(nodetest.Of[msg.Reply](effs)) != 0 || s.NextOpNum() != 1 {
		t.Fatalf("executed on a degraded block: %v", effs)
	}
	asks := nodetest.Msgs[msg.StripeSnapshot](effs)
	if len(asks) == 0 || asks[len(asks)-1].Stripe != 1 {
		t.Fatalf("no snapshot of stripe 1 to rebuild the block the request needs: %v", effs)
	}
	// The recovered client table answers a retry without executing.
	s.Handle(ctx, client(7), request(7, 3, write(blk1, 0, []byte{9})))
	effs = ctx.Take()
	if len(effs) != 1 || node.HashOf(effs[0].Msg) != node.HashOf(rec.Reply) {
		t.Fatalf("retry of a recovered request: %v, want the recorded reply", effs)
	}
}

// 3.3.2.3 step 2: "A data server, upon receiving the STRIPE-SNAPSHOT
// message, sends its data block for the stripe in question to the
// recovering server, along with its current op_num." It forwards the
// snapshot on its FIFO stream to the parity servers, after the PREPAREs it
// sent before (3.4.1: "the corresponding PREPARE message to each of the
// parity servers will precede the STRIPE-SNAPSHOT message"). Decision
// (docs/recovery.md): it answers "only once every operation it executed
// before the snapshot has committed".
func TestThesis3323DataServerAnswersAtTheCut(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{0xa1})))
	atCut := bytes.Clone(s.Block(blk0))
	s.Handle(ctx, msg.DataAddr(1), msg.StripeSnapshot{Num: 0, Stripe: 0, Nonce: 9, Requester: msg.DataAddr(1)})
	s.Handle(ctx, client(2), request(2, 1, write(blk0, 1, []byte{0xb2})))
	effs := ctx.Take()
	for _, p := range parities(0) {
		var kinds []string
		for _, e := range effs.To(p) {
			switch m := e.Msg.(type) {
			case msg.Prepare:
				kinds = append(kinds, fmt.Sprintf("prepare%d", m.OpNum))
			case msg.SnapshotMarker:
				kinds = append(kinds, "marker")
			}
			if e.Kind != nodetest.Stream {
				t.Fatalf("%v not on the stream", e)
			}
		}
		if !slices.Equal(kinds, []string{"prepare1", "marker", "prepare2"}) {
			t.Fatalf("stream to %s carried %v, want the marker between op 1 and op 2", p, kinds)
		}
	}
	if got := nodetest.Of[msg.SnapshotData](effs); len(got) != 0 {
		t.Fatalf("answered before op 1 committed: %v", got)
	}
	for _, op := range []uint64{1, 2} {
		for _, b := range backups(0) {
			ack(s, ctx, b, op, 0)
		}
	}
	answers := nodetest.Msgs[msg.SnapshotData](ctx.Take())
	if len(answers) != 1 {
		t.Fatalf("answers %v, want one once op 1 committed", answers)
	}
	if a := answers[0]; !bytes.Equal(a.Block, atCut) || a.OpNum != 2 || a.Primary != primary || a.Nonce != 9 {
		t.Fatalf("answer %+v, want the block with op 1 only (%x) and op_num 2", a, atCut)
	}
}

// 3.3.2.3 step 2: "Degraded data servers which have not yet rebuilt the
// block in question do not send a block to the recovering server but do
// send their current op_num."
func TestThesis3323DegradedDataServerAnswersNull(t *testing.T) {
	s, ctx := newIncarnation(t)
	ctx.Reset()
	// Stripe 6 (position 0 here) is not the one being rebuilt first.
	s.Handle(ctx, msg.DataAddr(1), msg.StripeSnapshot{Num: 1, Stripe: 6, Nonce: 4, Requester: msg.DataAddr(1)})
	answers := nodetest.Msgs[msg.SnapshotData](ctx.Take())
	if len(answers) != 1 || answers[0].Block != nil || answers[0].OpNum != 1 || answers[0].Primary != 2 {
		t.Fatalf("degraded answer %+v, want a null block with op_num 1", answers)
	}
}

// 3.3.2.3: "When a reconfiguration happens, servers discard any ongoing
// data recovery snapshots." A snapshot of another configuration gets no
// answer and no marker.
func TestThesis3323SnapshotOfAnotherConfigurationIgnored(t *testing.T) {
	s, ctx := newServer(t)
	h := s.Hash()
	s.Handle(ctx, msg.DataAddr(1), msg.StripeSnapshot{Num: 1, Stripe: 0, Nonce: 1, Requester: msg.DataAddr(1)})
	if effs := ctx.Take(); len(effs) != 0 || s.Hash() != h {
		t.Fatalf("snapshot of configuration 1 in configuration 0: %v", effs)
	}
}

// 3.3.2.3 step 4: "Once the recovering server has received responses from
// all servers (including itself) and at least g non-null data/parity
// blocks, it can use these blocks to decode the original stripe."
func TestThesis3323NewDataServerDecodesItsBlock(t *testing.T) {
	stripe := [][]byte{pattern(1), pattern(2), pattern(3)} // stripe 0: data/0, data/1, data/2
	par := erasuretest.Parity(t, testLayout, stripe)
	s, ctx := newIncarnation(t)
	asks := nodetest.Of[msg.StripeSnapshot](ctx.Take())
	if got := asks.Addrs(); !slices.Equal(got, []node.Addr{msg.DataAddr(1), msg.DataAddr(2)}) {
		t.Fatalf("snapshot asked of %v, want the stripe's other data servers", got)
	}
	q := asks[0].Msg.(msg.StripeSnapshot)
	if q.Stripe != 0 {
		t.Fatalf("background rebuild of stripe %d, want 0 first", q.Stripe)
	}
	for pos := 1; pos < 3; pos++ {
		s.Handle(ctx, msg.DataAddr(pos), msg.SnapshotData{Num: 1, Stripe: 0, Nonce: q.Nonce, Shard: pos, Block: stripe[pos], OpNum: 1, Primary: 1})
	}
	if !s.Degraded(0) {
		t.Fatal("decoded from g-1 blocks")
	}
	s.Handle(ctx, msg.ParityAddr(4), msg.SnapshotParity{Num: 1, Stripe: 0, Nonce: q.Nonce, Index: 1, Block: par[1]})
	if s.Degraded(0) || !bytes.Equal(s.Block(blk0), stripe[0]) {
		t.Fatalf("after g blocks: degraded %v, block %x; want %x", s.Degraded(0), s.Block(blk0), stripe[0])
	}
}

// 3.3.2.1 step 1 and 3.4.1: once the backups that promised the
// reconfiguration service stop accepting the old data server, it "will no
// longer be able to commit operations"; so it cannot answer a read with a
// value its replacement may have overwritten (docs/protocol.md, section 6:
// "A replaced data server gives no stale reads"). Real parity servers and
// witness, before and after they promise.
func TestThesis3321FencedDataServerServesNoRead(t *testing.T) {
	code := erasuretest.Code(t, testLayout)
	cfg := msg.InitialConfig(testLayout)
	s := New(cfg, me)
	net := nodetest.NewNet(map[node.Addr]node.Node{
		msg.DataAddr(me):   s,
		msg.ParityAddr(3):  parity.New(cfg, 3, code),
		msg.ParityAddr(4):  parity.New(cfg, 4, code),
		msg.WitnessAddr(5): witness.New(cfg, 5),
	})
	readOnce := func(seq uint64) []msg.Reply {
		t.Helper()
		net.Inject(client(1), msg.DataAddr(me), request(1, seq, read(blk0)))
		var replies []msg.Reply
		if _, err := net.DeliverAll(100, nil, func(e nodetest.Envelope, _ nodetest.Effects, _ bool) {
			if r, ok := e.Msg.(msg.Reply); ok && e.To == client(1) {
				replies = append(replies, r)
			}
		}); err != nil {
			t.Fatal(err)
		}
		return replies
	}
	if got := readOnce(1); len(got) != 1 {
		t.Fatalf("before the replacement: replies %v, want one", got)
	}
	// parity/3 and the witness promise (w+1 = 2 of stripe 0's 3 backups).
	for _, b := range []node.Addr{msg.ParityAddr(3), msg.WitnessAddr(5)} {
		net.Inject(msg.ReconfigAddr, b, msg.StopShard{Num: 1, Shard: me, Primary: primary})
	}
	if got := readOnce(2); len(got) != 0 {
		t.Fatalf("the fenced data server answered %v", got)
	}
	if s.PendingOps() != 1 {
		t.Fatalf("pending ops %d, want the read stuck without a quorum", s.PendingOps())
	}
}
