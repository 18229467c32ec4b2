package reconfig

import (
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

var foCfg = FailoverConfig{Round: time.Second, Suspect: 3, Grace: 2, Retry: 4}

// newFO is a detector leading term 1 over machines a, b, c with spares s, t.
func newFO() (*Failover, *nodetest.Ctx) {
	f, ctx := NewFailover(foCfg), newCtx()
	f.Init(ctx)
	f.Handle(ctx, "", Lead{Term: 1})
	f.Handle(ctx, "", View{Hosts: []string{"a", "b", "c"}, Spares: []string{"s", "t"}})
	return f, ctx
}

// rounds runs n rounds in which the given hosts send a heartbeat each; it
// returns the moves proposed.
func rounds(f *Failover, ctx *nodetest.Ctx, n int, alive ...string) []Move {
	var out []Move
	for range n {
		for _, h := range alive {
			f.Handle(ctx, "", Heartbeat{Host: h, Machine: 0})
		}
		f.Timer(ctx, round)
		for _, s := range take(ctx) {
			if mv, ok := s.Msg.(Move); ok && s.To == LogAddr {
				out = append(out, mv)
			}
		}
	}
	return out
}

func TestFailoverSuspectsSilentMachine(t *testing.T) {
	f, ctx := newFO()
	if mv := rounds(f, ctx, foCfg.Grace+foCfg.Suspect-1, "a", "b", "s", "t"); len(mv) != 0 {
		t.Fatalf("moved before %d silent rounds after the grace: %+v", foCfg.Suspect, mv)
	}
	mv := rounds(f, ctx, 1, "a", "b", "s", "t")
	if len(mv) != 1 || mv[0].Machine != 2 || mv[0].From != "c" || mv[0].To != "s" {
		t.Fatalf("moves %+v, want slot 2 from c to s", mv)
	}
	if again := rounds(f, ctx, foCfg.Retry-1, "a", "b", "s", "t"); len(again) != 0 {
		t.Fatalf("proposed again before Retry rounds: %+v", again)
	}
	if again := rounds(f, ctx, 1, "a", "b", "s", "t"); len(again) != 1 {
		t.Fatalf("not proposed again after Retry rounds: %+v", again)
	}
	f.Handle(ctx, "", View{Hosts: []string{"a", "b", "s"}, Spares: []string{"t"}})
	if again := rounds(f, ctx, 2*foCfg.Retry, "a", "b", "s", "t"); len(again) != 0 {
		t.Fatalf("moved after the move applied: %+v", again)
	}
}

func TestFailoverDistinctSpares(t *testing.T) {
	f, ctx := newFO()
	mv := rounds(f, ctx, foCfg.Grace+foCfg.Suspect, "a", "s", "t")
	if len(mv) != 2 || mv[0].To == mv[1].To {
		t.Fatalf("two suspicions in one round: moves %+v, want two distinct spares", mv)
	}
}

func TestFailoverNoLiveSpare(t *testing.T) {
	f, ctx := newFO()
	if mv := rounds(f, ctx, 10, "a", "b"); len(mv) != 0 {
		t.Fatalf("moved to a silent spare: %+v", mv)
	}
	if got := f.Suspected(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("suspected %v, want [2]", got)
	}
}

func TestFailoverResumeGrace(t *testing.T) {
	f, ctx := newFO()
	rounds(f, ctx, foCfg.Grace+foCfg.Suspect-1, "a", "b", "c", "s", "t")
	rounds(f, ctx, foCfg.Suspect-1) // nobody heard: one round short of suspicion
	f.Handle(ctx, "", Resumed{Rounds: 50})
	if mv := rounds(f, ctx, foCfg.Grace+foCfg.Suspect-1, "a", "b", "c", "s", "t"); len(mv) != 0 {
		t.Fatalf("a resumed detector moved live machines: %+v", mv)
	}
}

func TestFailoverRegistersSpare(t *testing.T) {
	f, ctx := newFO()
	f.Handle(ctx, "", Heartbeat{Host: "u", Machine: -1})
	f.Handle(ctx, "", Heartbeat{Host: "u", Machine: -1})
	out := take(ctx)
	if len(out) != 1 || out[0].Msg != (Register{Host: "u"}) {
		t.Fatalf("sent %+v, want one Register{u}", out)
	}
}

func TestApplyMoveReplacesTheSlot(t *testing.T) {
	cfg := msg.InitialConfig(layout)
	hosts, spares, reqs, ok := ApplyMove([]string{"a", "b"}, []string{"s"}, cfg, Move{Machine: 1, From: "b", To: "s"})
	if !ok || hosts[1] != "s" || len(spares) != 0 || len(reqs) != 3 {
		t.Fatalf("got %v %v %+v %v", hosts, spares, reqs, ok)
	}
	if _, _, _, ok := ApplyMove(hosts, spares, cfg, Move{Machine: 0, From: "a", To: "s"}); ok {
		t.Fatal("moved to a spare already taken")
	}
}
