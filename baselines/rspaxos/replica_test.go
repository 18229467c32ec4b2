package rspaxos

import (
	"bytes"
	"testing"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// The core's election timer, as this package instantiates it.
type electionTimer = paxos.ElectionTimer[Value, ID]

// cfg1 is f=1: groups of 4, quorums of 3, blocks of 16 bytes in 2 pieces
// of 8 plus 2 parity pieces.
var cfg1 = Config{Layout: erasure.Layout{N: 4, G: 1, F: 1, Stripes: 4, BlockSize: 16}}

func newAt(t *testing.T, cfg Config, g, i int) (*Replica, *nodetest.Ctx) {
	t.Helper()
	code, err := cfg.NewCode()
	if err != nil {
		t.Fatal(err)
	}
	r := NewReplica(cfg, code, g, i)
	ctx := nodetest.New(cfg.Addr(g, i))
	r.Init(ctx)
	ctx.Take().Messages()
	return r, ctx
}

func block(v byte) []byte { return bytes.Repeat([]byte{v}, cfg1.Layout.BlockSize) }

func put(r *Replica, client, seq uint64, v byte, member int) Value {
	return Value{Kind: Put, Client: client, Seq: seq, From: "client/0", Block: 0, Piece: r.encode(block(v))[member]}
}

// A PUT chosen in two slots (a retry re-proposed by a new leader) runs
// once: its second copy must not undo a later PUT.
func TestDuplicatePutRunsOnce(t *testing.T) {
	r, ctx := newAt(t, cfg1, 0, 1)
	a, b := put(r, 1, 1, 7, 1), put(r, 2, 1, 9, 1)
	r.Handle(ctx, cfg1.Addr(0, 0), Learn{Entries: []Chosen{{Slot: 1, Val: a}, {Slot: 2, Val: b}, {Slot: 3, Val: a}}})
	p, version, ok := r.Piece(0)
	if r.Applied() != 3 || version != 2 || !ok || !bytes.Equal(p, b.Piece) {
		t.Fatalf("applied %d, block 0 at version %d (held %v); want 3 and version 2, client 2's piece", r.Applied(), version, ok)
	}
}

// Phase 1 rebuilds a PUT from f+1 pieces of it in the quorum and proposes
// every member its own piece; with fewer pieces nothing can have been
// chosen and it proposes a no-op.
func TestPhase1RebuildsPut(t *testing.T) {
	r, ctx := newAt(t, cfg1, 0, 1)
	r.Timer(ctx, electionTimer{})
	bal, _ := r.Leading()
	ctx.Take().Messages()
	full := r.encode(block(5))
	v := Value{Kind: Put, Client: 3, Seq: 1, From: "client/2", Block: 0}
	other := Value{Kind: Put, Client: 4, Seq: 1, From: "client/3", Block: 0}
	old := Ballot{}
	// Slot 1: the PUT at members 2 and 3 (f+1=2 pieces). Slot 2: only at
	// member 2 (one piece), with an older value at member 3.
	r.Handle(ctx, cfg1.Addr(0, 2), P1b{Ballot: bal, Member: 2, Entries: []Accepted{
		{Slot: 1, Ballot: old, Val: v.WithPiece(full[2])}, {Slot: 2, Ballot: Ballot{Round: 0, Leader: 1}, Val: v.WithPiece(full[2])}}})
	r.Handle(ctx, cfg1.Addr(0, 3), P1b{Ballot: bal, Member: 3, Entries: []Accepted{
		{Slot: 1, Ballot: old, Val: v.WithPiece(full[3])}, {Slot: 2, Ballot: old, Val: other.WithPiece(r.encode(block(6))[3])}}})
	if r.Role() != "leader" {
		t.Fatalf("role %s after 3 of 4 promises", r.Role())
	}
	for _, s := range ctx.Take().Messages() {
		p, ok := s.Msg.(P2a)
		if !ok {
			continue
		}
		_, m, _ := ParseAddr(s.To)
		switch p.Slot {
		case 1:
			if p.Val.ID() != v.ID() || !bytes.Equal(p.Val.Piece, full[m]) {
				t.Fatalf("slot 1 to member %d: %v with piece %x, want %v with %x", m, p.Val.ID(), p.Val.Piece, v.ID(), full[m])
			}
		case 2:
			if p.Val.Kind != Noop {
				t.Fatalf("slot 2 proposed %v; the highest ballot's PUT has one piece in the quorum, so a no-op", p.Val.ID())
			}
		default:
			t.Fatalf("proposed slot %d", p.Slot)
		}
	}
}

// The leader answers a GET from f+1 pieces of the version the log order
// gives, ignoring missing pieces and pieces of other versions.
func TestGetDecodes(t *testing.T) {
	r, ctx := newAt(t, cfg1, 0, 0)
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: []msg.Op{{Kind: msg.OpWrite, Block: 0, Data: block(4)}}})
	for m := 0; m <= 2; m++ { // 0: the leader's own acceptance, sent to itself
		r.Handle(ctx, cfg1.Addr(0, m), P2b{Member: m, Slot: 1, Val: ID{Kind: Put, Client: 1, Seq: 1}})
	}
	if r.Applied() != 1 {
		t.Fatalf("PUT not applied with a quorum of 3")
	}
	r.Handle(ctx, "client/1", msg.Request{Client: 2, Seq: 1, Ops: []msg.Op{{Kind: msg.OpRead, Block: 0}}})
	for m := 0; m <= 2; m++ {
		r.Handle(ctx, cfg1.Addr(0, m), P2b{Member: m, Slot: 2, Val: ID{Kind: Get, Client: 2, Seq: 1}})
	}
	if r.Applied() != 2 || r.Reads() != 1 {
		t.Fatalf("applied %d with %d reads pending; want the GET executed and waiting for a piece", r.Applied(), r.Reads())
	}
	ctx.Take().Messages()
	full := r.encode(block(4))
	r.Handle(ctx, cfg1.Addr(0, 1), PieceReply{Member: 1, Slot: 2, Block: 0, Version: 1, Missing: true})
	r.Handle(ctx, cfg1.Addr(0, 2), PieceReply{Member: 2, Slot: 2, Block: 0, Version: 0, Piece: make([]byte, 8)})
	if out := ctx.Take().Messages(); len(out) != 0 || r.Reads() != 1 {
		t.Fatalf("answered from a missing piece or a piece of another version: %+v", out)
	}
	r.Handle(ctx, cfg1.Addr(0, 3), PieceReply{Member: 3, Slot: 2, Block: 0, Version: 1, Piece: full[3]})
	out := ctx.Take().Messages()
	if len(out) != 1 || out[0].To != "client/1" {
		t.Fatalf("sent %+v, want one reply to client/1", out)
	}
	rep := out[0].Msg.(msg.Reply)
	if rep.Seq != 1 || len(rep.Outcome.Results) != 1 || !bytes.Equal(rep.Outcome.Results[0].Data, block(4)) {
		t.Fatalf("GET reply %+v, want block of 4s", rep)
	}
	if r.Reads() != 0 {
		t.Fatal("read still pending after its reply")
	}
}

func TestUnsupported(t *testing.T) {
	r, ctx := newAt(t, cfg1, 0, 0)
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: []msg.Op{{Kind: msg.OpAdd, Block: 0, Delta: 1}}})
	out := ctx.Take().Messages()
	if len(out) != 1 || out[0].Msg.(msg.Reply).Err != ErrUnsupported {
		t.Fatalf("sent %+v, want an unsupported error", out)
	}
}

func TestCloneAndHash(t *testing.T) {
	r, ctx := newAt(t, cfg1, 0, 0)
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: []msg.Op{{Kind: msg.OpWrite, Block: 0, Data: block(4)}}})
	r.Handle(ctx, "client/1", msg.Request{Client: 2, Seq: 1, Ops: []msg.Op{{Kind: msg.OpRead, Block: 0}}})
	h := r.Hash()
	c := r.Clone().(*Replica)
	if c.Hash() != h {
		t.Fatalf("clone hashes %x, original %x", c.Hash(), h)
	}
	for m := 0; m <= 2; m++ { // 0: the leader's own acceptance, sent to itself
		c.Handle(ctx, cfg1.Addr(0, m), P2b{Member: m, Slot: 1, Val: ID{Kind: Put, Client: 1, Seq: 1}})
		c.Handle(ctx, cfg1.Addr(0, m), P2b{Member: m, Slot: 2, Val: ID{Kind: Get, Client: 2, Seq: 1}})
	}
	if c.Applied() != 2 || c.Reads() != 1 {
		t.Fatalf("clone applied %d, reads %d", c.Applied(), c.Reads())
	}
	if r.Hash() != h || r.Applied() != 0 || r.Reads() != 0 {
		t.Fatal("changing the clone changed the original")
	}
	d := c.Clone().(*Replica)
	d.Handle(ctx, cfg1.Addr(0, 1), PieceReply{Member: 1, Slot: 2, Block: 0, Version: 1, Piece: r.encode(block(4))[1]})
	if d.Reads() != 0 || c.Reads() != 1 || c.Hash() == d.Hash() {
		t.Fatal("a piece delivered to a clone reached the original")
	}
}

// The messages that leave before their batch is durable (node.EarlySender)
// are the leader's accept requests and its replies, as ShardedPaxos's: a
// PUT is acknowledged once chosen (never at its proposal), and its reply
// and the GET's decoded answer may leave ahead of the executing batch's
// sync. Acceptances (the leader's own to itself included) and pieces wait.
func TestEarlyMessages(t *testing.T) {
	r, ctx := newAt(t, cfg1, 0, 0)
	early := func(es nodetest.Effects) (n int, replies int) {
		for _, e := range es {
			if r.SendsEarly(e.Msg) {
				n++
			}
			if _, ok := e.Msg.(msg.Reply); ok {
				replies++
			}
		}
		return n, replies
	}
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: []msg.Op{{Kind: msg.OpWrite, Block: 0, Data: block(4)}}})
	out := ctx.Take().Messages()
	if n, replies := early(out); n != 3 || replies != 0 || len(out) != 4 {
		t.Fatalf("proposing a PUT sent %v: want 3 early accept requests and the leader's acceptance to itself, no reply", out)
	}
	for m := 0; m <= 2; m++ {
		r.Handle(ctx, cfg1.Addr(0, m), P2b{Member: m, Slot: 1, Val: ID{Kind: Put, Client: 1, Seq: 1}})
	}
	if out := ctx.Take().Messages().To("client/0"); len(out) != 1 || !r.SendsEarly(out[0].Msg) {
		t.Fatalf("chosen PUT's reply %v: want one, early", out)
	}
	r.Handle(ctx, "client/1", msg.Request{Client: 2, Seq: 1, Ops: []msg.Op{{Kind: msg.OpRead, Block: 0}}})
	for m := 0; m <= 2; m++ {
		r.Handle(ctx, cfg1.Addr(0, m), P2b{Member: m, Slot: 2, Val: ID{Kind: Get, Client: 2, Seq: 1}})
	}
	ctx.Take()
	r.Handle(ctx, cfg1.Addr(0, 1), PieceReply{Member: 1, Slot: 2, Block: 0, Version: 1, Piece: r.encode(block(4))[1]})
	if out := ctx.Take().Messages().To("client/1"); len(out) != 1 || !r.SendsEarly(out[0].Msg) {
		t.Fatalf("decoded GET's reply %v: want one, early", out)
	}
	f, fctx := newAt(t, cfg1, 0, 1)
	f.Handle(fctx, cfg1.Addr(0, 0), paxos.P2a[Value, ID]{Member: 0, Slot: 1, Val: put(f, 1, 1, 4, 1)})
	if out := fctx.Take().Messages(); len(out) != 1 || f.SendsEarly(out[0].Msg) {
		t.Fatalf("follower's acceptance %v: want one, not early", out)
	}
}
