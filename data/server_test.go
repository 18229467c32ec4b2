package data

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

const (
	blockSize = 16
	me        = 0
	primary   = 1 // incarnation of every server in the initial config
)

// testLayout: n=6, g=3, f=2, w=1, so each stripe has a witness too.
// Machine 0 is data in stripes 0, 1, 2, 6, 7, 8 (positions 0, 1, 2, ...).
var testLayout = erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 12, BlockSize: blockSize}

// Blocks of shard 0 used below, and their stripes' backups.
var (
	blk0 = testLayout.Block(0, 0) // stripe 0: parity/3, parity/4, witness/5
	blk1 = testLayout.Block(1, 1) // stripe 1: parity/2, parity/3, witness/4
)

func newServer(t *testing.T) (*Server, *nodetest.Ctx) {
	t.Helper()
	if err := testLayout.Validate(); err != nil {
		t.Fatal(err)
	}
	s := New(msg.InitialConfig(testLayout), me)
	ctx := nodetest.New(msg.DataAddr(me))
	s.Init(ctx)
	if len(ctx.Effects()) != 0 {
		t.Fatalf("Init had effects: %v", ctx.Effects())
	}
	return s, ctx
}

// backups lists the addresses the data server prepares to for stripe st:
// parity servers by index, then witnesses.
func backups(st int) []node.Addr {
	var out []node.Addr
	for k := 0; k < testLayout.F; k++ {
		out = append(out, msg.ParityAddr(testLayout.ParityMachine(st, k)))
	}
	for k := 0; k < testLayout.W; k++ {
		out = append(out, msg.WitnessAddr(testLayout.WitnessMachine(st, k)))
	}
	return out
}

func parities(st int) []node.Addr { return backups(st)[:testLayout.F] }

func client(c uint64) node.Addr { return msg.ClientAddr(int(c)) }

func request(c, seq uint64, ops ...msg.Op) msg.Request {
	return msg.Request{Client: c, Seq: seq, Ops: ops}
}

func write(b uint64, off int, data []byte) msg.Op {
	return msg.Op{Kind: msg.OpWrite, Block: b, Offset: off, Data: data}
}

func read(b uint64) msg.Op { return msg.Op{Kind: msg.OpRead, Block: b} }

func ack(s *Server, ctx *nodetest.Ctx, from node.Addr, opNum uint64, stripe int) {
	s.Handle(ctx, from, msg.PrepareOK{Shard: me, Primary: primary, OpNum: opNum, Stripe: stripe, Inc: 1})
}

func pattern(start byte) []byte {
	b := make([]byte, blockSize)
	for i := range b {
		b[i] = start + byte(3*i)
	}
	return b
}

// expectNone fails if there were effects.
func expectNone(t *testing.T, what string, effs nodetest.Effects) {
	t.Helper()
	if len(effs) != 0 {
		t.Fatalf("%s: want no effects, got %v", what, effs)
	}
}

// split sorts effects by message type, checking each is sent the right way:
// replies unordered, protocol messages over the stream.
func split(t *testing.T, effs nodetest.Effects) (replies nodetest.Effects, prepares, commits, drops nodetest.Effects) {
	t.Helper()
	for _, e := range effs {
		kind, to := nodetest.Stream, (*nodetest.Effects)(nil)
		switch e.Msg.(type) {
		case msg.Reply:
			kind, to = nodetest.Send, &replies
		case msg.Prepare:
			to = &prepares
		case msg.Commit:
			to = &commits
		case msg.PrepareDrop:
			to = &drops
		default:
			t.Errorf("unexpected effect %v", e)
			continue
		}
		if e.Kind != kind {
			t.Errorf("%T not sent by %s: %v", e.Msg, kind, e)
		}
		*to = append(*to, e)
	}
	return
}

func addrs(effs nodetest.Effects) []node.Addr {
	out := make([]node.Addr, len(effs))
	for i, e := range effs {
		out[i] = e.To
	}
	return out
}

func sameSet(a, b []node.Addr) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestWriteCommitProtocol(t *testing.T) {
	s, ctx := newServer(t)
	old := pattern(1)
	s.blocks.Put(blk0, bytes.Clone(old))
	nw := bytes.Clone(old)
	copy(nw[4:], []byte{0xde, 0xad, 0xbe, 0xef})

	s.Handle(ctx, client(7), request(7, 1, write(blk0, 4, []byte{0xde, 0xad, 0xbe, 0xef})))
	replies, preps, commits, drops := split(t, ctx.Take())
	if len(replies)+len(commits)+len(drops) != 0 {
		t.Fatalf("before any ack: replies %v commits %v drops %v", replies, commits, drops)
	}
	if got, want := addrs(preps), backups(0); !slices.Equal(got, want) {
		t.Fatalf("prepared to %v, want %v (f parity then w witnesses)", got, want)
	}
	wantDelta := erasure.Delta(old, nw)
	for _, e := range preps {
		p := e.Msg.(msg.Prepare)
		if p.Shard != me || p.Primary != primary || p.OpNum != 1 || p.Stripe != 0 || p.Pos != 0 ||
			p.Client != 7 || p.Seq != 1 || !slices.Equal(p.Stripes, []int{0}) {
			t.Errorf("prepare to %s = %+v", e.To, p)
		}
		if !bytes.Equal(p.Delta, wantDelta) {
			t.Errorf("prepare to %s: delta %x, want old XOR new = %x", e.To, p.Delta, wantDelta)
		}
	}
	if !bytes.Equal(s.Block(blk0), nw) {
		t.Fatalf("block = %x, want %x", s.Block(blk0), nw)
	}
	if s.NextOpNum() != 2 || s.PendingOps() != 1 || !s.PendingOn(0) || s.PendingOn(1) {
		t.Fatalf("op_num %d, pending %d", s.NextOpNum(), s.PendingOps())
	}

	// f-1 acks: nothing happens.
	ack(s, ctx, parities(0)[0], 1, 0)
	expectNone(t, "after 1 of f=2 acks", ctx.Take())
	// A duplicate ack does not count twice.
	ack(s, ctx, parities(0)[0], 1, 0)
	expectNone(t, "after a duplicate ack", ctx.Take())

	// The f-th ack (from the witness): reply, and COMMIT to the parity servers only.
	ack(s, ctx, backups(0)[2], 1, 0)
	replies, preps, commits, drops = split(t, ctx.Take())
	if len(preps) != 0 || len(drops) != 0 {
		t.Fatalf("at commit: prepares %v drops %v", preps, drops)
	}
	if len(replies) != 1 || replies[0].To != client(7) {
		t.Fatalf("replies %v, want one to %s", replies, client(7))
	}
	if r := replies[0].Msg.(msg.Reply); r.Seq != 1 || r.Err != "" || r.Outcome.Aborted || len(r.Outcome.Results) != 1 {
		t.Fatalf("reply %+v", r)
	}
	if got := addrs(commits); !slices.Equal(got, parities(0)) {
		t.Fatalf("commits to %v, want the parity servers %v", got, parities(0))
	}
	for _, e := range commits {
		if c := e.Msg.(msg.Commit); c != (msg.Commit{Shard: me, Primary: primary, OpNum: 1, Stripe: 0}) {
			t.Errorf("commit %+v", c)
		}
	}
	if s.PendingOps() != 1 {
		t.Fatalf("pending ops %d, want 1 until every parity server acks", s.PendingOps())
	}

	// The last parity ack: PREPARE-DROP to every backup, pending_ops empties.
	ack(s, ctx, parities(0)[1], 1, 0)
	replies, preps, commits, drops = split(t, ctx.Take())
	if len(replies)+len(preps)+len(commits) != 0 {
		t.Fatalf("at drop: replies %v prepares %v commits %v", replies, preps, commits)
	}
	if got := addrs(drops); !slices.Equal(got, backups(0)) {
		t.Fatalf("drops to %v, want %v", got, backups(0))
	}
	for _, e := range drops {
		if d := e.Msg.(msg.PrepareDrop); d != (msg.PrepareDrop{Shard: me, Primary: primary, OpNum: 1, Stripe: 0}) {
			t.Errorf("drop %+v", d)
		}
	}
	if s.PendingOps() != 0 || s.PendingOn(0) {
		t.Fatalf("pending ops %d after drop", s.PendingOps())
	}

	// Late acks for a dropped op are ignored.
	ack(s, ctx, backups(0)[2], 1, 0)
	expectNone(t, "late ack", ctx.Take())
}

func TestAllParityAcksCommitAndDropTogether(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	ctx.Take()
	ack(s, ctx, parities(0)[1], 1, 0)
	ack(s, ctx, parities(0)[0], 1, 0)
	effs := ctx.Take()
	replies, _, commits, drops := split(t, effs)
	if len(replies) != 1 || len(commits) != 2 || len(drops) != 3 {
		t.Fatalf("effects %v", effs)
	}
	// On each stream, COMMIT comes before PREPARE-DROP.
	for _, to := range parities(0) {
		var kinds []string
		for _, e := range effs {
			if e.To == to {
				kinds = append(kinds, fmt.Sprintf("%T", e.Msg))
			}
		}
		if !slices.Equal(kinds, []string{"msg.Commit", "msg.PrepareDrop"}) {
			t.Errorf("stream to %s carried %v", to, kinds)
		}
	}
	if s.PendingOps() != 0 {
		t.Fatal("pending ops not empty")
	}
}

func TestCommitInOpNumOrder(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	s.Handle(ctx, client(2), request(2, 1, write(blk1, 0, []byte{2})))
	_, preps, _, _ := split(t, ctx.Take())
	if len(preps) != 6 || preps[0].Msg.(msg.Prepare).OpNum != 1 || preps[3].Msg.(msg.Prepare).OpNum != 2 {
		t.Fatalf("prepares %v", preps)
	}

	// Op 2 (stripe 1) gets every ack first: it must wait for op 1.
	for _, b := range backups(1) {
		ack(s, ctx, b, 2, 1)
	}
	expectNone(t, "op 2 acked before op 1", ctx.Take())
	if s.PendingOps() != 2 {
		t.Fatalf("pending ops %d", s.PendingOps())
	}

	// Op 1 reaches its quorum: both commit, op 1 first.
	ack(s, ctx, parities(0)[0], 1, 0)
	ack(s, ctx, backups(0)[2], 1, 0)
	replies, _, commits, drops := split(t, ctx.Take())
	if len(replies) != 2 || replies[0].To != client(1) || replies[1].To != client(2) {
		t.Fatalf("replies %v, want client 1 then client 2", replies)
	}
	var order []uint64
	for _, c := range commits {
		order = append(order, c.Msg.(msg.Commit).OpNum)
	}
	if !slices.Equal(order, []uint64{1, 1, 2, 2}) {
		t.Fatalf("commit op numbers %v, want [1 1 2 2]", order)
	}
	// Op 2 had every parity ack: dropped. Op 1 still waits for parity 1.
	if len(drops) != 3 || drops[0].Msg.(msg.PrepareDrop).OpNum != 2 {
		t.Fatalf("drops %v", drops)
	}
	if s.PendingOps() != 1 {
		t.Fatalf("pending ops %d, want 1", s.PendingOps())
	}
}

func TestClientTable(t *testing.T) {
	s, ctx := newServer(t)
	req := request(3, 1, write(blk0, 2, []byte{9, 9}))
	s.Handle(ctx, client(3), req)
	ctx.Take()

	// A retry while pending is ignored.
	s.Handle(ctx, client(3), req)
	expectNone(t, "retry while pending", ctx.Take())

	for _, b := range backups(0) {
		ack(s, ctx, b, 1, 0)
	}
	replies, _, _, _ := split(t, ctx.Take())
	if len(replies) != 1 {
		t.Fatalf("replies %v", replies)
	}
	first := replies[0].Msg.(msg.Reply)
	block := bytes.Clone(s.Block(blk0))
	hash := s.Hash()

	// A retry of the committed seq gets the cached reply, without executing.
	s.Handle(ctx, client(3), req)
	effs := ctx.Take()
	if len(effs) != 1 || effs[0].Kind != "send" || effs[0].To != client(3) {
		t.Fatalf("retry of a committed request: %v", effs)
	}
	if node.HashOf(effs[0].Msg.(msg.Reply)) != node.HashOf(first) {
		t.Fatalf("cached reply %+v differs from %+v", effs[0].Msg, first)
	}
	if s.NextOpNum() != 2 || s.PendingOps() != 0 || !bytes.Equal(s.Block(blk0), block) || s.Hash() != hash {
		t.Fatal("the retry was executed again")
	}

	// The next seq runs; then an older seq is ignored.
	s.Handle(ctx, client(3), request(3, 2, read(blk0)))
	_, preps, _, _ := split(t, ctx.Take())
	if len(preps) != 3 || preps[0].Msg.(msg.Prepare).OpNum != 2 {
		t.Fatalf("seq 2: %v", preps)
	}
	for _, b := range backups(0) {
		ack(s, ctx, b, 2, 0)
	}
	ctx.Take()
	s.Handle(ctx, client(3), req) // seq 1 again
	expectNone(t, "older seq", ctx.Take())
	if s.NextOpNum() != 3 {
		t.Fatalf("op_num %d", s.NextOpNum())
	}

	// Clients are independent: another client's seq 1 runs.
	s.Handle(ctx, client(4), request(4, 1, read(blk0)))
	if _, preps, _, _ := split(t, ctx.Take()); len(preps) != 3 {
		t.Fatalf("client 4: %v", preps)
	}
}

func TestBadRequests(t *testing.T) {
	foreign := testLayout.Block(0, 1) // stripe 0, position 1: machine 1's shard
	if testLayout.Shard(foreign) == me {
		t.Fatal("test setup: block is on this shard")
	}
	cases := []struct {
		name string
		ops  []msg.Op
		want string
	}{
		{"offset past block", []msg.Op{write(blk0, blockSize, []byte{1})}, "outside the block"},
		{"block of another shard", []msg.Op{write(foreign, 0, []byte{1})}, "not on this shard"},
		{"block past the end", []msg.Op{read(testLayout.NumBlocks())}, "not on this shard"},
		{"unknown op", []msg.Op{{Kind: 77, Block: blk0}}, "unknown op kind"},
		{"empty txn", nil, "empty transaction"},
		{"bad op in a txn", []msg.Op{write(blk0, 0, []byte{1}), write(blk1, 15, []byte{1, 2})}, "op 1:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ctx := newServer(t)
			s.blocks.Put(blk0, pattern(5))
			blocksHash := s.blocks.Hash()
			req := request(1, 1, tc.ops...)
			s.Handle(ctx, client(1), req)
			effs := ctx.Take()
			if len(effs) != 1 || effs[0].Kind != "send" || effs[0].To != client(1) {
				t.Fatalf("effects %v, want one reply to the client", effs)
			}
			r := effs[0].Msg.(msg.Reply)
			if r.Seq != 1 || !strings.Contains(r.Err, tc.want) || !strings.Contains(r.Err, msg.ErrBadOp.Error()) {
				t.Fatalf("reply %+v, want Err mentioning %q", r, tc.want)
			}
			if s.blocks.Hash() != blocksHash || !bytes.Equal(s.Block(blk0), pattern(5)) {
				t.Fatal("a rejected request changed a block")
			}
			if s.NextOpNum() != 1 || s.PendingOps() != 0 {
				t.Fatal("a rejected request got an op number")
			}
			// The retry gets the same error, still without executing.
			s.Handle(ctx, client(1), req)
			effs = ctx.Take()
			if len(effs) != 1 || effs[0].To != client(1) || effs[0].Msg.(msg.Reply).Err != r.Err {
				t.Fatalf("retry: %v", effs)
			}
			if s.NextOpNum() != 1 || s.blocks.Hash() != blocksHash {
				t.Fatal("the retry executed")
			}
		})
	}
}

func TestReadWaitsForUncommittedWrite(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{0xab})))
	ctx.Take()
	s.Handle(ctx, client(2), request(2, 1, read(blk0)))
	_, preps, _, _ := split(t, ctx.Take())
	// The read is ordered after the write through its own (empty) PREPARE.
	if len(preps) != 3 {
		t.Fatalf("read prepares %v", preps)
	}
	for _, e := range preps {
		if p := e.Msg.(msg.Prepare); p.OpNum != 2 || p.Delta != nil {
			t.Errorf("read prepare %+v, want op 2 with no delta", p)
		}
	}
	// The read's quorum arrives first: no answer yet.
	for _, b := range backups(0) {
		ack(s, ctx, b, 2, 0)
	}
	if replies, _, _, _ := split(t, ctx.Take()); len(replies) != 0 {
		t.Fatalf("read answered before the write committed: %v", replies)
	}
	// The write commits: the write's reply, then the read's.
	ack(s, ctx, parities(0)[0], 1, 0)
	ack(s, ctx, parities(0)[1], 1, 0)
	replies, _, _, _ := split(t, ctx.Take())
	if len(replies) != 2 || replies[0].To != client(1) || replies[1].To != client(2) {
		t.Fatalf("replies %v", replies)
	}
	got := replies[1].Msg.(msg.Reply).Outcome.Results[0].Data
	want := make([]byte, blockSize)
	want[0] = 0xab
	if !bytes.Equal(got, want) {
		t.Fatalf("read %x, want %x", got, want)
	}
}

func TestTxnAcrossStripes(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1,
		write(blk0, 0, []byte{1, 2}),
		msg.Op{Kind: msg.OpAdd, Block: blk1, Offset: 8, Delta: 5},
		read(blk0),
	))
	_, preps, _, _ := split(t, ctx.Take())
	byStripe := map[int][]node.Addr{}
	for _, e := range preps {
		p := e.Msg.(msg.Prepare)
		if p.OpNum != 1 || !slices.Equal(p.Stripes, []int{0, 1}) {
			t.Errorf("prepare %+v: want op 1 over stripes [0 1]", p)
		}
		byStripe[p.Stripe] = append(byStripe[p.Stripe], e.To)
		want := make([]byte, blockSize)
		switch p.Stripe {
		case 0:
			want[0], want[1] = 1, 2
		case 1:
			want[8] = 5
			if p.Pos != 1 {
				t.Errorf("stripe 1 prepare at position %d, want 1", p.Pos)
			}
		}
		if !bytes.Equal(p.Delta, want) {
			t.Errorf("stripe %d delta %x, want %x", p.Stripe, p.Delta, want)
		}
	}
	if len(byStripe) != 2 || !slices.Equal(byStripe[0], backups(0)) || !slices.Equal(byStripe[1], backups(1)) {
		t.Fatalf("prepares by stripe %v", byStripe)
	}
	if s.NextOpNum() != 2 {
		t.Fatalf("op_num %d, want one op number for the txn", s.NextOpNum())
	}

	// A quorum on stripe 0 alone does not commit.
	for _, b := range backups(0) {
		ack(s, ctx, b, 1, 0)
	}
	// An ack for stripe 1 from a server that is not its backup does not count.
	ack(s, ctx, backups(0)[0], 1, 1) // parity/3 is a backup of stripe 1 ...
	ack(s, ctx, msg.ParityAddr(5), 1, 1)
	ack(s, ctx, msg.WitnessAddr(5), 1, 1)
	expectNone(t, "quorum on one stripe", ctx.Take())

	ack(s, ctx, backups(1)[2], 1, 1) // ... and witness/4 makes f on stripe 1
	replies, _, commits, drops := split(t, ctx.Take())
	if len(replies) != 1 {
		t.Fatalf("replies %v", replies)
	}
	out := replies[0].Msg.(msg.Reply).Outcome
	if len(out.Results) != 3 || out.Results[1].Value != 5 || out.Results[2].Data[1] != 2 {
		t.Fatalf("outcome %+v", out)
	}
	var cs []node.Addr
	for _, c := range commits {
		cm := c.Msg.(msg.Commit)
		if cm.OpNum != 1 {
			t.Errorf("commit %+v", cm)
		}
		cs = append(cs, c.To)
	}
	if !sameSet(cs, append(parities(0), parities(1)...)) {
		t.Fatalf("commits to %v", cs)
	}
	if len(drops) != 0 {
		t.Fatalf("dropped before every parity server of stripe 1 acked: %v", drops)
	}
	ack(s, ctx, parities(1)[0], 1, 1)
	_, _, _, drops = split(t, ctx.Take())
	if len(drops) != 6 || s.PendingOps() != 0 {
		t.Fatalf("drops %v, pending %d", drops, s.PendingOps())
	}
}

func TestPrepareOKFromWrongPrimaryIgnored(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	ctx.Take()
	hash := s.Hash()
	for _, b := range backups(0) {
		s.Handle(ctx, b, msg.PrepareOK{Shard: me, Primary: primary + 1, OpNum: 1, Stripe: 0, Inc: 1})
		s.Handle(ctx, b, msg.PrepareOK{Shard: me + 1, Primary: primary, OpNum: 1, Stripe: 0, Inc: 1})
		s.Handle(ctx, b, msg.PrepareOK{Shard: me, Primary: primary, OpNum: 9, Stripe: 0, Inc: 1})
		s.Handle(ctx, b, msg.PrepareOK{Shard: me, Primary: primary, OpNum: 1, Stripe: 2, Inc: 1})
	}
	expectNone(t, "bad acks", ctx.Take())
	if s.Hash() != hash {
		t.Fatal("ignored acks changed the state")
	}
	// Unknown messages and timers are ignored too.
	s.Handle(ctx, backups(0)[0], msg.Commit{Shard: me, Primary: primary, OpNum: 1})
	s.Timer(ctx, nil)
	expectNone(t, "unknown message", ctx.Take())
	if s.Hash() != hash {
		t.Fatal("an ignored message changed the state")
	}
}

func TestCloneAndHash(t *testing.T) {
	s, ctx := newServer(t)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, []byte{1, 2, 3})))
	ack(s, ctx, parities(0)[0], 1, 0)
	ctx.Take()

	h := s.Hash()
	if h != s.Hash() {
		t.Fatal("Hash is not stable")
	}
	c := s.Clone().(*Server)
	if c.Hash() != h {
		t.Fatal("clone hashes differently")
	}

	// Events on the clone leave the original alone.
	ack(c, ctx, backups(0)[2], 1, 0)                                   // commits op 1
	c.Handle(ctx, client(2), request(2, 1, write(blk0, 0, []byte{7}))) // changes the block
	ctx.Take()
	if c.Hash() == h {
		t.Fatal("clone's hash did not change after handled events")
	}
	if s.Hash() != h || s.PendingOps() != 1 || s.NextOpNum() != 2 || s.Block(blk0)[0] != 1 {
		t.Fatalf("events on the clone changed the original (pending %d, op_num %d, block %x)",
			s.PendingOps(), s.NextOpNum(), s.Block(blk0))
	}
	if c.Block(blk0)[0] != 7 {
		t.Fatal("clone did not apply its write")
	}

	// Events on the original leave the clone alone. The original has not
	// seen client 2, so its own seq 1 from client 2 runs there.
	ch := c.Hash()
	s.Handle(ctx, client(2), request(2, 1, write(blk0, 1, []byte{8})))
	if _, preps, _, _ := split(t, ctx.Take()); len(preps) != 3 {
		t.Fatalf("original ignored a request only the clone had seen: %v", preps)
	}
	ack(s, ctx, parities(0)[1], 1, 0)
	ctx.Take()
	if c.Hash() != ch || c.Block(blk0)[1] != 2 {
		t.Fatal("events on the original changed the clone")
	}
	if s.Hash() == h {
		t.Fatal("original's hash did not change after handled events")
	}

	// Equal histories hash equal; the hash sees the client table.
	a, actx := newServer(t)
	b, bctx := newServer(t)
	a.Handle(actx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	b.Handle(bctx, client(1), request(1, 1, write(blk0, 0, []byte{1})))
	if a.Hash() != b.Hash() {
		t.Fatal("equal states hash differently")
	}
	d, dctx := newServer(t)
	d.Handle(dctx, client(2), request(2, 1, write(blk0, 0, []byte{1})))
	if d.Hash() == a.Hash() {
		t.Fatal("different clients hash alike")
	}
}
