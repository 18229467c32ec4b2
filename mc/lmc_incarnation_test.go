package mc_test

import (
	"maps"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
)

// A small protocol with incarnation starts: boss starts incarnations 2
// and 3 of worker (in either order), which streams pings to peer (two at
// start, one on its timer, one when restarted); peer records them and
// streams pongs back, which worker records.
type (
	boss   struct{}
	worker struct {
		Inc  uint64
		Sent int
		Got  []int
	}
	peer   struct{ Seen []int }
	start  struct{ Inc uint64 }
	ping   struct{ N int }
	pong   struct{ N int }
	ticker struct{}
)

func (m start) Hash(h *node.Hasher)                           { h.Uint64(1); h.Uint64(m.Inc) }
func (m ping) Hash(h *node.Hasher)                            { h.Uint64(2); h.Int(m.N) }
func (m pong) Hash(h *node.Hasher)                            { h.Uint64(3); h.Int(m.N) }
func (ticker) Hash(h *node.Hasher)                            { h.Uint64(4) }
func (m start) StartsIncarnation(to node.Addr) (uint64, bool) { return m.Inc, to == "worker" }

func (*boss) Init(ctx node.Context) {
	ctx.Send("worker", start{Inc: 2})
	ctx.Send("worker", start{Inc: 3})
}
func (*boss) Handle(node.Context, node.Addr, node.Message) {}
func (*boss) Timer(node.Context, node.Timer)               {}
func (b *boss) Clone() node.Node                           { return b }
func (*boss) Hash() uint64                                 { return 1 }

func (w *worker) ping(ctx node.Context) {
	w.Sent++
	ctx.Stream("peer", ping{N: int(w.Inc)*10 + w.Sent})
}

func (w *worker) Init(ctx node.Context) {
	w.ping(ctx)
	w.ping(ctx)
	ctx.SetTimer(ticker{}, time.Second, time.Second)
}

func (w *worker) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	switch m := m.(type) {
	case start:
		if m.Inc > w.Inc {
			w.Inc, w.Sent, w.Got = m.Inc, 0, nil
			w.ping(ctx)
		}
	case pong:
		w.Got = append(w.Got[:len(w.Got):len(w.Got)], m.N)
	}
}

func (w *worker) Timer(ctx node.Context, _ node.Timer) { w.ping(ctx) }
func (w *worker) Clone() node.Node                     { c := *w; return &c }
func (w *worker) Incarnation() uint64                  { return w.Inc }
func (w *worker) Hash() uint64 {
	h := node.NewHasher()
	h.Uint64(w.Inc)
	h.Int(w.Sent)
	h.Ints(w.Got)
	return h.Sum()
}

func (*peer) Init(node.Context)              {}
func (*peer) Timer(node.Context, node.Timer) {}
func (p *peer) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	if m, ok := m.(ping); ok {
		p.Seen = append(p.Seen[:len(p.Seen):len(p.Seen)], m.N)
		ctx.Stream("worker", pong(m))
	}
}
func (p *peer) Clone() node.Node { c := *p; return &c }
func (p *peer) Hash() uint64 {
	h := node.NewHasher()
	h.Ints(p.Seen)
	return h.Sum()
}

// TestLMCIncarnationStart: with an incarnation start that ends streams
// in both directions and a timer, the combinations of local states LMC
// confirms are exactly the projection of BFS's reachable states, and
// LMC's local view has the restarted streams' steps (worker's pong from
// the new incarnation's ping, taken after skipping the old ones).
func TestLMCIncarnationStart(t *testing.T) {
	init := func() *mc.State {
		return mc.NewState(map[node.Addr]node.Node{"boss": &boss{}, "worker": &worker{Inc: 1}, "peer": &peer{}})
	}
	set := mc.Settings{MaxTimerFires: 1}
	nodes := init().Addrs()
	global := map[string]bool{}
	o := mc.Options{Strategy: mc.BFS, Settings: set, Invariants: []mc.Predicate{mc.Pred("record", func(s *mc.State) (bool, string) {
		global[tuple(s, nodes)] = true
		return true, ""
	})}}
	if r := mc.Search(init(), o); r.Outcome != mc.Exhausted {
		t.Fatalf("bfs %s", r.Outcome)
	}
	local := map[string]bool{}
	r, st := mc.LMCValid(init(), mc.LMCOptions{Settings: set, Invariants: []mc.Predicate{everyNode()}},
		func(s *mc.State) { local[tuple(s, nodes)] = true })
	t.Logf("%d global combinations, %d confirmed by LMC (%d local states, %d incarnation starts, checks %d/%d)",
		len(global), len(local), r.States, st.Starts, st.Passed, st.Checks)
	if r.Outcome != mc.Exhausted || st.Abandoned != 0 || st.Starts == 0 || !maps.Equal(global, local) {
		t.Errorf("lmc %s, %d checks gave up, %d starts; %d global combinations, %d confirmed", r.Outcome, st.Abandoned, st.Starts, len(global), len(local))
	}
	if !local[restarted(t, init)] {
		t.Error("LMC does not confirm the worker's new incarnation with its ping answered")
	}
}

// restarted is the tuple where worker restarted and got the pong of its
// new incarnation's first ping, peer having seen the old pings too.
func restarted(t *testing.T, init func() *mc.State) string {
	s := init()
	var err error
	step := func(ev mc.Event) {
		if err == nil {
			s, err = s.Apply(ev)
		}
	}
	for _, e := range s.Events(mc.Settings{}) {
		if e.Kind == mc.StreamIn {
			step(e)
		}
	}
	for _, e := range s.Events(mc.Settings{}) {
		if e.Kind == mc.Deliver && e.Env.Msg == (start{Inc: 2}) {
			step(e)
		}
	}
	for _, e := range s.Events(mc.Settings{}) {
		if e.Kind == mc.StreamIn && e.Target() == "peer" {
			step(e)
		}
	}
	for _, e := range s.Events(mc.Settings{}) {
		if e.Kind == mc.StreamIn && e.Target() == "worker" {
			step(e)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Node("worker").(*worker); w.Inc != 2 || len(w.Got) != 1 || w.Got[0] != 21 {
		t.Fatalf("the steps reach worker %+v", w)
	}
	return tuple(s, s.Addrs())
}
