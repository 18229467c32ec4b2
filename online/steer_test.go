package online

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/workload"
)

// history is what seededLoad's clients did.
type history struct {
	mu  sync.Mutex
	ops []porcupine.Operation
	n   atomic.Int64
}

// seededLoad starts a local cluster and writers running seeded workloads
// until stop is called; stop returns the history. setup, if set, gets the
// cluster before the writers start.
func seededLoad(t *testing.T, seed uint64, writers int, setup func(*runtime.Local)) (lc *runtime.Local, stop func() []porcupine.Operation, h *history) {
	return seededLoadAbandon(t, seed, writers, 0, setup)
}

// seededLoadAbandon is seededLoad whose writers give up an operation
// after abandon (0: never) and go on with the next. An operation that did
// not return (abandoned, failed, or cut short by stop) may still take
// effect at any time: it is in the history as pending (no output).
func seededLoadAbandon(t *testing.T, seed uint64, writers int, abandon time.Duration, setup func(*runtime.Local)) (lc *runtime.Local,
	stop func() []porcupine.Operation, h *history) {
	t.Helper()
	lc, err := runtime.StartLocal(runtime.LocalOptions{Layout: testLayout, Durability: "memory", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(lc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h = &history{}
	start := time.Now()
	wait := startWriters(ctx, t, lc, writers, func(c *client.Client, w int) {
		rnd := rand.New(rand.NewPCG(seed, uint64(w)))
		for ctx.Err() == nil {
			ops := workload.Generate(rnd.Uint64, testLayout, testLayout.NumBlocks(), 1, workload.DefaultMix)[0]
			call := time.Since(start).Nanoseconds()
			cctx, cancel := ctx, context.CancelFunc(func() {})
			if abandon > 0 {
				cctx, cancel = context.WithTimeout(ctx, abandon)
			}
			out, err := c.Txn(cctx, ops)
			cancel()
			if err != nil {
				h.mu.Lock()
				h.ops = append(h.ops, porcupine.Operation{ClientId: w, Input: ops, Call: call, Return: math.MaxInt64})
				h.mu.Unlock()
				if abandon > 0 && ctx.Err() == nil && cctx.Err() != nil {
					continue
				}
				if ctx.Err() == nil {
					t.Logf("writer %d: %v", w, err)
				}
				return
			}
			ret := time.Since(start).Nanoseconds()
			h.mu.Lock()
			h.ops = append(h.ops, porcupine.Operation{ClientId: w, Input: ops, Call: call, Output: msg.Reply{Outcome: out}, Return: ret})
			h.mu.Unlock()
			h.n.Add(1)
		}
	})
	stopped := false
	stop = func() []porcupine.Operation {
		if !stopped {
			stopped = true
			cancel()
			wait()
		}
		return h.ops
	}
	t.Cleanup(func() { stop(); lc.Close() })
	return lc, stop, h
}

// Steering on the unmutated protocol: the immediate check on every
// machine, automatic steering (check filters among its candidates) on
// through two seeded stalls (the fault of TestSteeringTable), and checked
// filters that pause the streams carrying messages in flight at each cut,
// or check a data server's PREPARE-OKs. Nothing is predicted, the check refuses
// nothing, and the clients' history stays linearizable.
func TestSteeringKeepsLinearizable(t *testing.T) { keepsLinearizable(t, false) }

// The same with hold filters: automatic steering with hold filters as its
// candidates, and checked hold filters of the messages in flight at each
// cut (from their sender, or from every sender from their operation on),
// which hold and then release real messages.
func TestHoldSteeringKeepsLinearizable(t *testing.T) { keepsLinearizable(t, true) }

func keepsLinearizable(t *testing.T, holds bool) {
	lc, stop, _ := seededLoad(t, 1, 3, immediateCheck(runtime.DataCommitCheck()))
	steer := LocalSteerer(lc.Machines)
	o := Options{Every: 150 * time.Millisecond, MaxStates: 1500, Consequence: true, Steer: steer, SteerFor: 200 * time.Millisecond,
		CheckFilters: !holds, HoldFilters: holds}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var rep *Report
	go func() {
		var err error
		rep, err = Run(ctx, Local(lc.Machines), o)
		done <- err
	}()
	for _, w := range stallSchedule(1, 2) {
		time.Sleep(w.gap)
		stall(lc, w)
		time.Sleep(w.d + stallSettle)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) > 0 {
		t.Fatalf("predicted on the unmutated protocol: %q: %s", rep.Found[0].Predicate, rep.Found[0].Explanation)
	}
	installed := 0
	src := Local(lc.Machines)
	heldNow := func() (n int64) {
		for _, m := range lc.Machines {
			n += m.HoldStats()
		}
		return n
	}
	for attempt := 0; (installed < 4 || holds && heldNow() == 0) && attempt < 100; attempt++ {
		time.Sleep(runtime.DefaultSnapshotMinInterval)
		snaps, err := src(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCut(snaps)
		if err != nil || len(c.InFlight) == 0 {
			continue
		}
		m := c.InFlight[attempt%len(c.InFlight)]
		f := Filter{From: m.From, To: m.To, Kind: runtime.StreamKind}
		if d := msg.DataAddr(attempt % 2); attempt%2 == 1 && !holds {
			f = Filter{From: d, To: d, Kind: runtime.CheckPrefix + "PrepareOK"} // every other one a check filter
		}
		if holds {
			if f, err = heldInFlight(m, attempt%2 == 1); err != nil {
				t.Fatal(err)
			}
		}
		r, err := c.CheckFilter(f, Options{MaxStates: 1500, Consequence: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcome == mc.Violation {
			t.Fatalf("%s leads to %q on the unmutated protocol: %s", f, r.Predicate, r.Explanation)
		}
		if err := steer(context.Background(), f, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		installed++
	}
	if installed == 0 {
		t.Fatal("no filter installed: no cut with stream messages in flight")
	}
	time.Sleep(300 * time.Millisecond) // the last pause ends and its stream resumes
	hist := stop()
	var refused, checked int64
	for _, m := range lc.Machines {
		refused += m.ImmediateStats().Refused + m.ImmediateStats().Steered
		checked += m.ImmediateStats().Checked
	}
	held := heldNow()
	if holds && held == 0 {
		t.Fatal("the hold filters held no message")
	}
	if checked == 0 {
		t.Fatal("the immediate check checked no PREPARE-OK")
	}
	if refused != 0 {
		t.Fatalf("the immediate check refused %d messages of the unmutated protocol", refused)
	}
	if len(hist) == 0 {
		t.Fatal("no operation completed")
	}
	v := workload.Check(testLayout, hist)
	t.Log(v)
	if p := v.Problem(); p != "" {
		t.Fatalf("with steering: %s", p)
	}
	t.Logf("%d cuts through 2 stalls, %d filters installed by hand (%d messages held), %d PREPARE-OKs checked, %d operations, linearizable",
		len(rep.States), installed, held, checked, len(hist))
}

// heldInFlight is a hold filter of message m in flight: of its kind from
// its sender, or, with every, from every sender from the operation it
// carries on.
func heldInFlight(m Message, every bool) (Filter, error) {
	nm, err := m.Decode()
	if err != nil {
		return Filter{}, err
	}
	h := runtime.Hold{Kind: runtime.MessageKind(nm), Stripe: -1}
	if !every {
		return Filter{m.From, m.To, h.String()}, nil
	}
	h.MinOp, _ = runtime.OpOf(nm)
	return Filter{m.To, m.To, h.String()}, nil
}

// stall pauses every stream from data server k to its backups for d
// plus a seeded 0 to 200 ms per stream, so that they resume in an order
// of their own: a late delivery, which the protocol tolerates, that keeps
// operations on the stripes of k pending long enough for a cut to see
// them. The machine of k installs the pauses, as a steering filter would.
func stall(lc *runtime.Local, w stallWindow) {
	l, rnd := testLayout, rand.New(rand.NewPCG(w.seed, 1))
	for _, st := range l.StripesAs(w.k, erasure.RoleData) {
		for i, m := range l.Backups(st) {
			to := msg.ParityAddr(m)
			if i >= l.F {
				to = msg.WitnessAddr(m)
			}
			lc.Machines[w.k].Steer(msg.DataAddr(w.k), to, runtime.StreamKind, w.d+time.Duration(rnd.IntN(200))*time.Millisecond)
		}
	}
}

// stallWindow is one window of a run with stalls: it waits gap, stalls
// data server k for d (stall), then waits stallSettle for the late
// messages to land.
type stallWindow struct {
	gap, d time.Duration
	k      int
	seed   uint64
}

const stallSettle = 600 * time.Millisecond

// stallSchedule is n seeded windows: gaps of 300 to 800 ms, stalls of 500
// to 1200 ms of data/0 or data/1 (the data servers with blocks in both
// stripes of the test layout).
func stallSchedule(seed uint64, n int) []stallWindow {
	rnd := rand.New(rand.NewPCG(seed, 7))
	var ws []stallWindow
	for range n {
		ws = append(ws, stallWindow{gap: time.Duration(300+rnd.IntN(500)) * time.Millisecond,
			k: rnd.IntN(2), d: time.Duration(500+rnd.IntN(700)) * time.Millisecond, seed: rnd.Uint64()})
	}
	return ws
}

// immediateCheck is a seededLoad setup that turns on ic on every machine.
func immediateCheck(ic *runtime.ImmediateCheck) func(*runtime.Local) {
	return func(lc *runtime.Local) {
		for _, m := range lc.Machines {
			m.SetImmediateCheck(ic)
		}
	}
}

type testTimer struct{}

func (testTimer) Hash(*node.Hasher) {}

func TestCandidates(t *testing.T) {
	ok := msg.PrepareOK{OpNum: 1}
	trace := []mc.Event{
		{Kind: mc.StreamIn, Env: mc.Envelope{From: "data/0", To: "parity/3", Msg: msg.Prepare{}}},
		{Kind: mc.Crash, Node: "parity/4"},
		{Kind: mc.Fire, Node: "parity/3", T: testTimer{}},
		{Kind: mc.Deliver, Env: mc.Envelope{From: "data/0", To: "reconfig", Msg: msg.ConfigOK{}}},
		{Kind: mc.StreamIn, Env: mc.Envelope{From: "parity/3", To: "data/0", Msg: ok}},
		{Kind: mc.StreamIn, Env: mc.Envelope{From: "data/0", To: "parity/3", Msg: msg.Commit{}}},
	}
	got := Candidates(trace)
	want := []Filter{
		{"data/0", "parity/3", runtime.StreamKind},
		{"parity/3", "data/0", runtime.StreamKind},
		{"data/0", "reconfig", "ConfigOK"},
		{"parity/3", "parity/3", runtime.TimerPrefix + "testTimer"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	if got, want := checkFiltersOf(trace), []Filter{{"data/0", "data/0", runtime.CheckPrefix + "PrepareOK"}}; !slices.Equal(got, want) {
		t.Fatalf("check filters %v, want %v", got, want)
	}
	for i, f := range want {
		for j, e := range trace {
			refused := (i == 0 && (j == 0 || j == 5)) || (i == 1 && j == 4) || (i == 2 && j == 3) || (i == 3 && j == 2)
			if f.allows(e) == refused {
				t.Errorf("%s allows %s: %v", f, e, !refused)
			}
		}
	}
}

// recorder is a node that records the messages it handles.
type recorder struct{ got []node.Message }

func (r *recorder) Init(node.Context)                                  {}
func (r *recorder) Handle(_ node.Context, _ node.Addr, m node.Message) { r.got = append(r.got, m) }
func (r *recorder) Timer(node.Context, node.Timer)                     {}
func (r *recorder) Clone() node.Node                                   { return &recorder{slices.Clone(r.got)} }
func (r *recorder) Hash() uint64                                       { return uint64(len(r.got)) }

// A hold filter in the search refuses exactly the deliveries the runtime
// holds (runtime.TestHoldFilter): to its receiver, from its sender (every
// sender when From is To), of its kind, operation and stripe; the trace's
// hold filters are those of its deliveries that carry an operation; and
// when it lifts, the held messages are applied in the runtime's order.
func TestHoldFilterInSearch(t *testing.T) {
	ok := func(op uint64, stripe int) msg.PrepareOK { return msg.PrepareOK{OpNum: op, Stripe: stripe} }
	in := func(from node.Addr, m node.Message) mc.Event {
		return mc.Event{Kind: mc.StreamIn, Env: mc.Envelope{From: from, To: "data/0", Msg: m}}
	}
	every := Filter{"data/0", "data/0", runtime.Hold{Kind: "PrepareOK", MinOp: 5, Stripe: -1}.String()}
	one := Filter{"parity/3", "data/0", runtime.Hold{Kind: "PrepareOK", Stripe: 1}.String()}
	for _, c := range []struct {
		f    Filter
		e    mc.Event
		want bool
	}{
		{every, in("parity/1", ok(6, 0)), false},
		{every, in("parity/1", ok(4, 0)), true},
		{every, in("parity/1", msg.Commit{OpNum: 7}), true},
		{every, mc.Event{Kind: mc.Deliver, Env: mc.Envelope{From: "parity/2", To: "data/0", Msg: ok(9, 0)}}, false},
		{every, mc.Event{Kind: mc.StreamIn, Env: mc.Envelope{From: "parity/1", To: "data/1", Msg: ok(9, 0)}}, true},
		{one, in("parity/3", ok(3, 1)), false},
		{one, in("parity/3", ok(3, 0)), true},
		{one, in("parity/2", ok(3, 1)), true},
		{one, mc.Event{Kind: mc.Fire, Node: "data/0", T: testTimer{}}, true},
	} {
		if got := c.f.allows(c.e); got != c.want {
			t.Errorf("%s allows %s: %v, want %v", c.f, c.e, got, c.want)
		}
	}
	trace := []mc.Event{
		{Kind: mc.StreamIn, Env: mc.Envelope{From: "data/0", To: "parity/3", Msg: msg.Prepare{OpNum: 4, Stripe: 1}}},
		in("parity/3", ok(4, 1)),
		{Kind: mc.Fire, Node: "parity/3", T: testTimer{}},
	}
	hold := func(from, to node.Addr, kind string, op uint64, stripe int) Filter {
		return Filter{from, to, runtime.Hold{Kind: kind, MinOp: op, Stripe: stripe}.String()}
	}
	want := []Filter{hold("data/0", "data/0", "PrepareOK", 4, -1), hold("parity/3", "parity/3", "Prepare", 4, -1),
		hold("data/0", "data/0", "PrepareOK", 4, 1), hold("parity/3", "parity/3", "Prepare", 4, 1),
		hold("parity/3", "data/0", "PrepareOK", 4, -1), hold("data/0", "parity/3", "Prepare", 4, -1)}
	if got := holdFiltersOf(trace); !slices.Equal(got, want) {
		t.Fatalf("hold filters %v, want %v", got, want)
	}
	// The hold of more of the trace's deliveries comes before the one of
	// the delivery closest to the violation.
	trace = []mc.Event{in("parity/2", ok(5, 0)), in("parity/3", ok(4, 0)),
		{Kind: mc.StreamIn, Env: mc.Envelope{From: "data/0", To: "parity/3", Msg: msg.Commit{OpNum: 4}}}}
	first := []Filter{hold("data/0", "data/0", "PrepareOK", 4, -1), hold("data/0", "data/0", "PrepareOK", 4, 0),
		hold("parity/3", "parity/3", "Commit", 4, -1)}
	if got := holdFiltersOf(trace); !slices.Equal(got[:3], first) {
		t.Fatalf("hold filters %v, want first %v", got, first)
	}
	if f := want[0]; f.host() != "data/0" || want[5].host() != "parity/3" || (Filter{"data/0", "parity/3", runtime.StreamKind}).host() != "data/0" {
		t.Error("a hold filter is not applied at its receiver, or another filter not at its sender")
	}
	// The messages of runtime.TestHoldFilter, in flight; every and one
	// hold them (and those behind them) and release them in that order.
	nodes := map[node.Addr]node.Node{}
	for _, a := range []node.Addr{"data/0", "parity/1", "parity/2", "parity/3"} {
		nodes[a] = &recorder{}
	}
	var fl []mc.InFlight
	for _, m := range []struct {
		from node.Addr
		m    node.Message
	}{{"parity/1", ok(4, 0)}, {"parity/1", ok(6, 0)}, {"parity/1", msg.Commit{OpNum: 1}}, {"parity/2", ok(5, 1)},
		{"parity/2", ok(3, 0)}, {"parity/3", ok(2, 0)}, {"parity/3", ok(3, 1)}, {"parity/3", ok(4, 0)}} {
		fl = append(fl, mc.InFlight{From: m.from, To: "data/0", Msg: m.m})
	}
	s, err := deliverAll(mc.NewStateAt(nodes, nil, fl), func(_ *mc.State, evs []mc.Event) int {
		return slices.IndexFunc(evs, func(e mc.Event) bool { return every.allows(e) && one.allows(e) })
	})
	if err != nil {
		t.Fatal(err)
	}
	applied := []node.Message{ok(4, 0), ok(2, 0)}
	if got := s.Node("data/0").(*recorder).got; !slices.Equal(got, applied) {
		t.Fatalf("applied %v while the filters hold, want %v", got, applied)
	}
	for _, f := range []Filter{one, every} {
		h, _ := f.hold()
		if s, err = release(s, f, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	applied = append(applied, ok(3, 1), ok(4, 0), ok(5, 1), ok(3, 0), ok(6, 0), msg.Commit{OpNum: 1})
	if got := s.Node("data/0").(*recorder).got; !slices.Equal(got, applied) {
		t.Fatalf("applied %v once the filters lift, want %v", got, applied)
	}
}
