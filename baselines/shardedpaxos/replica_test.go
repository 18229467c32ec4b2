package shardedpaxos

import (
	"encoding/binary"
	"github.com/amalgam-store/amalgam/baselines/paxos"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// The core's timers, as this package instantiates them.
type (
	electionTimer  = paxos.ElectionTimer[Value, ID]
	heartbeatTimer = paxos.HeartbeatTimer[Value, ID]
)

func cfgF(f int) Config {
	return Config{Layout: erasure.Layout{N: 2*f + 1, G: 1, F: f, Stripes: 4, BlockSize: 16}}
}

func addOp(b, d uint64) []msg.Op { return []msg.Op{{Kind: msg.OpAdd, Block: b, Delta: d}} }

func counter(r *Replica, b uint64) uint64 { return binary.LittleEndian.Uint64(r.Block(b)[:8]) }

func newAt(cfg Config, g, i int) (*Replica, *nodetest.Ctx) {
	r := NewReplica(cfg, g, i)
	ctx := nodetest.New(cfg.Addr(g, i))
	r.Init(ctx)
	ctx.Take().Messages()
	return r, ctx
}

// A follower must not take a commit index as choosing a value it accepted
// at a smaller ballot than the leader's: that value may have lost.
func TestCommitNeedsBallot(t *testing.T) {
	cfg := cfgF(2)
	r, ctx := newAt(cfg, 0, 1)
	old := Value{Client: 1, Seq: 1, From: "client/0", Ops: addOp(0, 5)}
	r.Handle(ctx, cfg.Addr(0, 0), P2a{Ballot: Ballot{}, Member: 0, Slot: 1, Val: old})
	// Member 2 took over at ballot 1.2 and chose another value for slot 1;
	// this member missed the accept request.
	b := Ballot{Round: 1, Leader: 2}
	r.Handle(ctx, cfg.Addr(0, 2), Heartbeat{Ballot: b, Member: 2, Commit: 1})
	if r.Applied() != 0 {
		t.Fatalf("applied slot 1 from a commit index at ballot %v, but accepted it at %v", b, Ballot{})
	}
	out := ctx.Take().Messages()
	if ok, is := out[len(out)-1].Msg.(HeartbeatOK); !is || ok.Applied != 0 {
		t.Fatalf("heartbeat answer %+v, want HeartbeatOK with Applied 0", out[len(out)-1].Msg)
	}
	win := Value{Client: 2, Seq: 1, From: "client/1", Ops: addOp(0, 7)}
	r.Handle(ctx, cfg.Addr(0, 2), Learn{Ballot: b, Member: 2, Entries: []Chosen{{Slot: 1, Val: win}}})
	if r.Applied() != 1 || counter(r, 0) != 7 {
		t.Fatalf("after learning slot 1: applied %d, counter %d; want 1 and 7", r.Applied(), counter(r, 0))
	}
	// The same value accepted at the leader's ballot is chosen by the index.
	r.Handle(ctx, cfg.Addr(0, 2), P2a{Ballot: b, Member: 2, Slot: 2, Val: old, Commit: 1})
	r.Handle(ctx, cfg.Addr(0, 2), Heartbeat{Ballot: b, Member: 2, Commit: 2})
	if r.Applied() != 2 || counter(r, 0) != 12 {
		t.Fatalf("after commit 2: applied %d, counter %d; want 2 and 12", r.Applied(), counter(r, 0))
	}
}

// A request chosen in two slots (a retry re-proposed by a new leader)
// executes once.
func TestDuplicateSlotsExecuteOnce(t *testing.T) {
	cfg := cfgF(1)
	r, ctx := newAt(cfg, 0, 1)
	v := Value{Client: 7, Seq: 1, From: "client/6", Ops: addOp(0, 3)}
	w := Value{Client: 7, Seq: 2, From: "client/6", Ops: addOp(0, 10)}
	r.Handle(ctx, cfg.Addr(0, 0), Learn{Entries: []Chosen{{Slot: 1, Val: v}, {Slot: 2, Val: v}, {Slot: 3, Val: w}, {Slot: 4, Val: v}, {Slot: 5, Val: Value{Noop: true}}}})
	if r.Applied() != 5 || counter(r, 0) != 13 {
		t.Fatalf("applied %d, counter %d; want 5 and 13 (3 once, then 10)", r.Applied(), counter(r, 0))
	}
	if len(ctx.Take().Messages()) != 0 {
		t.Fatal("a follower replied to a client")
	}
}

// The leader executes a slot once a quorum accepted it at its ballot,
// replies, and discards the slot only after every full replica applied it.
func TestLeaderCommitAndGC(t *testing.T) {
	cfg := cfgF(1) // members 0 and 1 full, 2 a witness
	r, ctx := newAt(cfg, 0, 0)
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: addOp(0, 4)})
	out := ctx.Take().Messages()
	if len(out) != 3 || out[2].To != cfg.Addr(0, 0) {
		t.Fatalf("leader sent %+v for a request, want 2 accept requests and its own acceptance to itself", out)
	}
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: addOp(0, 4)})
	if n := len(ctx.Take().Messages()); n != 0 {
		t.Fatalf("a retry of a request in progress sent %d messages, want none", n)
	}
	// A reply to another ballot does not count.
	r.Handle(ctx, cfg.Addr(0, 2), P2b{Ballot: Ballot{Round: 3, Leader: 1}, Member: 2, Slot: 1, Val: ID{Client: 1, Seq: 1}})
	if r.Applied() != 0 {
		t.Fatal("counted a phase 2 reply to another ballot")
	}
	r.Handle(ctx, cfg.Addr(0, 2), P2b{Member: 2, Slot: 1, Val: ID{Client: 1, Seq: 1}})
	if r.Applied() != 0 {
		t.Fatal("chosen before the leader's own acceptance came back")
	}
	r.Handle(ctx, cfg.Addr(0, 0), P2b{Member: 0, Slot: 1, Val: ID{Client: 1, Seq: 1}})
	if r.Applied() != 1 || counter(r, 0) != 4 {
		t.Fatalf("applied %d, counter %d; want 1 and 4", r.Applied(), counter(r, 0))
	}
	out = ctx.Take().Messages()
	if len(out) != 1 || out[0].To != "client/0" {
		t.Fatalf("sent %+v, want one reply to client/0", out)
	}
	if rep, ok := out[0].Msg.(msg.Reply); !ok || rep.Seq != 1 || rep.Outcome.Results[0].Value != 4 {
		t.Fatalf("reply %+v", out[0].Msg)
	}
	// Slot 1 was committed after the last heartbeat: the follower learns
	// it from the next one, so an answer to an older heartbeat gets no Learn.
	r.Handle(ctx, cfg.Addr(0, 1), HeartbeatOK{Member: 1, Applied: 0})
	if out = ctx.Take().Messages(); len(out) != 0 {
		t.Fatalf("sent %+v for a slot committed after the last heartbeat, want nothing", out)
	}
	r.Timer(ctx, heartbeatTimer{})
	ctx.Take().Messages()
	// Witness answers do not move GC; a lagging full replica gets a Learn.
	r.Handle(ctx, cfg.Addr(0, 2), HeartbeatOK{Member: 2})
	r.Handle(ctx, cfg.Addr(0, 1), HeartbeatOK{Member: 1, Applied: 0})
	if r.GC() != 0 || r.LogLen() != 1 {
		t.Fatalf("gc %d with %d slots before member 1 applied, want 0 and 1", r.GC(), r.LogLen())
	}
	if out = ctx.Take().Messages(); len(out) != 1 {
		t.Fatalf("sent %d messages to a lagging replica, want one Learn", len(out))
	} else if l, ok := out[0].Msg.(Learn); !ok || len(l.Entries) != 1 || l.Entries[0].Slot != 1 {
		t.Fatalf("sent %+v, want Learn of slot 1", out[0].Msg)
	}
	r.Handle(ctx, cfg.Addr(0, 1), HeartbeatOK{Member: 1, Applied: 1})
	if r.GC() != 0 {
		t.Fatalf("gc %d before the leader's own applied prefix came back, want 0", r.GC())
	}
	r.Handle(ctx, cfg.Addr(0, 0), HeartbeatOK{Member: 0, Applied: 1})
	if r.GC() != 1 || r.LogLen() != 0 {
		t.Fatalf("gc %d with %d slots after every replica applied, want 1 and 0", r.GC(), r.LogLen())
	}
	// A retry of the executed request gets the same reply again.
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: addOp(0, 4)})
	if out = ctx.Take().Messages(); len(out) != 1 || node.HashOf(out[0].Msg) != node.HashOf(msg.Reply{Seq: 1, Outcome: msg.Outcome{Results: []msg.Result{{Value: 4}}}}) {
		t.Fatalf("retry got %+v", out)
	}
}

// Phase 1 proposes, for every slot, the value of the highest ballot any
// member of the quorum reported, and a no-op where none reported any.
func TestPhase1AdoptsHighestBallot(t *testing.T) {
	cfg := cfgF(2) // quorum 3
	r, ctx := newAt(cfg, 0, 1)
	r.Timer(ctx, electionTimer{})
	bal, _ := r.Leading()
	out := ctx.Take().Messages()
	if len(out) != 4 || r.Role() != "candidate" || bal != (Ballot{Round: 1, Leader: 1}) {
		t.Fatalf("election: role %s ballot %v, sent %d; want candidate at 1.1 sending 4 P1a", r.Role(), bal, len(out))
	}
	v1 := Value{Client: 1, Seq: 1, Ops: addOp(0, 1)}
	v2 := Value{Client: 2, Seq: 1, Ops: addOp(0, 2)}
	v3 := Value{Client: 3, Seq: 1, Ops: addOp(0, 3)}
	r.Handle(ctx, cfg.Addr(0, 3), P1b{Ballot: bal, Member: 3, Entries: []Accepted{
		{Slot: 1, Ballot: Ballot{}, Val: v1}, {Slot: 3, Ballot: Ballot{}, Val: v3}}})
	if r.Role() != "candidate" {
		t.Fatal("leader with 2 of 5 promises")
	}
	r.Handle(ctx, cfg.Addr(0, 4), P1b{Ballot: bal, Member: 4, Entries: []Accepted{
		{Slot: 1, Ballot: Ballot{Round: 0, Leader: 2}, Val: v2}}})
	if r.Role() != "leader" {
		t.Fatalf("role %s with 3 of 5 promises", r.Role())
	}
	want := map[uint64]ID{1: v2.ID(), 2: {Noop: true}, 3: v3.ID()}
	got := map[uint64]ID{}
	for _, s := range ctx.Take().Messages() {
		if p, ok := s.Msg.(P2a); ok {
			if p.Ballot != bal {
				t.Fatalf("P2a at ballot %v, want %v", p.Ballot, bal)
			}
			if id, seen := got[p.Slot]; seen && id != p.Val.ID() {
				t.Fatalf("slot %d proposed as %v and %v", p.Slot, id, p.Val.ID())
			}
			got[p.Slot] = p.Val.ID()
		}
	}
	if len(got) != len(want) {
		t.Fatalf("proposed %v, want %v", got, want)
	}
	for s, id := range want {
		if got[s] != id {
			t.Fatalf("slot %d proposed %v, want %v", s, got[s], id)
		}
	}
	// A smaller ballot is refused with the promise.
	r.Handle(ctx, cfg.Addr(0, 0), P2a{Ballot: Ballot{}, Member: 0, Slot: 9, Val: v1})
	if out := ctx.Take().Messages(); len(out) != 1 {
		t.Fatalf("sent %d, want one Nack", len(out))
	} else if n, ok := out[0].Msg.(Nack); !ok || n.Promised != bal {
		t.Fatalf("sent %+v, want Nack with promise %v", out[0].Msg, bal)
	}
}

func TestCloneAndHash(t *testing.T) {
	cfg := cfgF(1)
	r, ctx := newAt(cfg, 0, 0)
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: addOp(0, 4)})
	r.Handle(ctx, cfg.Addr(0, 1), P2b{Member: 1, Slot: 1, Val: ID{Client: 1, Seq: 1}})
	r.Handle(ctx, cfg.Addr(0, 0), P2b{Member: 0, Slot: 1, Val: ID{Client: 1, Seq: 1}})
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 2, Ops: addOp(0, 4)})
	r.Handle(ctx, cfg.Addr(0, 0), P2b{Member: 0, Slot: 2, Val: ID{Client: 1, Seq: 2}})
	h := r.Hash()
	c := r.Clone().(*Replica)
	if c.Hash() != h {
		t.Fatalf("clone hashes %x, original %x", c.Hash(), h)
	}
	c.Handle(ctx, cfg.Addr(0, 1), P2b{Member: 1, Slot: 2, Val: ID{Client: 1, Seq: 2}})
	if c.Applied() != 2 || counter(c, 0) != 8 {
		t.Fatalf("clone applied %d, counter %d", c.Applied(), counter(c, 0))
	}
	if r.Hash() != h || r.Applied() != 1 || counter(r, 0) != 4 {
		t.Fatal("changing the clone changed the original")
	}
	if c.Hash() == h {
		t.Fatal("different states hash equal")
	}
}

// A heartbeat retransmits only the accept requests that were already
// outstanding at the previous heartbeat.
func TestHeartbeatRetransmitsOldAccepts(t *testing.T) {
	cfg := cfgF(1)
	r, ctx := newAt(cfg, 0, 0)
	r.Handle(ctx, "client/0", msg.Request{Client: 1, Seq: 1, Ops: addOp(0, 4)})
	ctx.Take().Messages()
	p2as := func() (n int) {
		for _, o := range ctx.Take().Messages() {
			if _, ok := o.Msg.(P2a); ok {
				n++
			}
		}
		return n
	}
	r.Timer(ctx, heartbeatTimer{})
	if n := p2as(); n != 0 {
		t.Fatalf("first heartbeat resent %d accept requests sent just before it, want 0", n)
	}
	r.Timer(ctx, heartbeatTimer{})
	if n := p2as(); n != 2 {
		t.Fatalf("second heartbeat resent %d accept requests, want 2 (one per other member)", n)
	}
}
