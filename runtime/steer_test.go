package runtime

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

func TestSteeringFilters(t *testing.T) {
	h := &Host{log: slog.New(slog.DiscardHandler)}
	m := msg.ConfigOK{Num: 3}
	if k := MessageKind(m); k != "ConfigOK" {
		t.Fatalf("kind %q, want ConfigOK", k)
	}
	if h.steer.drops("data/0", "reconfig", m) {
		t.Fatal("dropped without a filter")
	}
	h.Steer("data/0", "reconfig", "ConfigOK", time.Hour)
	h.Steer("data/1", "reconfig", "ConfigOK", -time.Second) // already expired
	for _, c := range []struct {
		from, to string
		want     bool
	}{{"data/0", "reconfig", true}, {"data/1", "reconfig", false}, {"data/0", "parity/1", false}} {
		if got := h.steer.drops(node.Addr(c.from), node.Addr(c.to), m); got != c.want {
			t.Errorf("%s -> %s ConfigOK dropped: %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if h.steer.drops("data/0", "reconfig", msg.StopBackupOK{}) {
		t.Error("a filter of ConfigOK dropped a StopBackupOK")
	}
	if n := h.steer.n.Load(); n != 1 {
		t.Errorf("%d filters left, want 1 (the expired one forgotten)", n)
	}
	h.Unsteer("data/0", "reconfig", "ConfigOK")
	if h.steer.drops("data/0", "reconfig", m) || h.steer.n.Load() != 0 {
		t.Error("Unsteer left the filter of data/0 -> reconfig ConfigOK in place")
	}
	h.Steer("data/0", "reconfig", "ConfigOK", time.Hour)
	if !h.steer.paused("data/0", "parity/1").IsZero() {
		t.Error("a stream paused without a filter")
	}
	h.Steer("data/0", "parity/1", StreamKind, time.Hour)
	if h.steer.paused("data/0", "parity/1").IsZero() || !h.steer.paused("parity/1", "data/0").IsZero() {
		t.Error("the pause of data/0 -> parity/1 is not exactly that stream's")
	}
	if h.steer.drops("data/0", "parity/1", m) {
		t.Error("a stream pause dropped an unordered message")
	}
	h.Steer("parity/1", "parity/1", TimerPrefix+"retryRebuild", time.Hour)
	if h.steer.postponed("parity/1", retryRebuild{}).IsZero() || !h.steer.postponed("parity/2", retryRebuild{}).IsZero() {
		t.Error("the postponement of parity/1's retryRebuild is not exactly that node's")
	}
	h.Steer("data/0", "data/0", CheckPrefix+"PrepareOK", time.Hour)
	if !h.steer.checking("data/0", "PrepareOK") || h.steer.checking("data/1", "PrepareOK") || h.steer.checking("data/0", "Prepare") {
		t.Error("the check filter of data/0's PrepareOK is not exactly that node's and kind's")
	}
}

type retryRebuild struct{}

func (retryRebuild) Hash(*node.Hasher) {}

// recorder is a node that records the messages it handles.
type recorder struct{ got []node.Message }

func (r *recorder) Init(node.Context)                                  {}
func (r *recorder) Handle(_ node.Context, _ node.Addr, m node.Message) { r.got = append(r.got, m) }
func (r *recorder) Timer(node.Context, node.Timer)                     {}
func (r *recorder) Clone() node.Node                                   { c := *r; c.got = slices.Clone(r.got); return &c }
func (r *recorder) Hash() uint64                                       { return 0 }

// A hold filter holds at the receiver exactly the messages it matches
// (kind, sender, operation and stripe) and those behind them on their
// streams, lets every other message through at once, and when it expires
// applies the held ones in the order of their operations, each stream in
// its order.
func TestHoldFilter(t *testing.T) {
	h := &Host{ctx: context.Background(), log: slog.New(slog.DiscardHandler)}
	rec := &recorder{}
	l := &loop{h: h, addr: "data/0", n: rec, inbox: make(chan event, 16), in: map[node.Addr]*inStream{}}
	for sid, from := range []node.Addr{"parity/1", "parity/2", "parity/3"} {
		l.inStream(from).sid = uint64(sid + 1)
	}
	seq := map[node.Addr]uint64{}
	send := func(from node.Addr, m node.Message) {
		seq[from]++
		sid := l.inStream(from).sid
		l.collect([]event{{from: from, m: m, sid: sid, seq: seq[from]}}, false)
	}
	ok := func(op uint64, stripe int) msg.PrepareOK { return msg.PrepareOK{OpNum: op, Stripe: stripe} }
	if _, _, err := ParseHold("hold:PrepareOK@op>=x"); err == nil {
		t.Fatal("a bad qualifier parsed")
	}
	hd, isHold, err := ParseHold("hold:PrepareOK@op>=5")
	if !isHold || err != nil || hd != (Hold{Kind: "PrepareOK", MinOp: 5, Stripe: -1}) || hd.String() != "hold:PrepareOK@op>=5" {
		t.Fatalf("parsed %+v, %v, %v", hd, isHold, err)
	}
	// Held: PREPARE-OKs of op 5 and later from every sender to data/0;
	// data/1's are not, and only stripe 1 of parity/3's before op 5.
	h.Steer("data/0", "data/0", hd.String(), time.Hour)
	h.Steer("data/1", "data/1", hd.String(), time.Hour)
	h.Steer("parity/3", "data/0", "hold:PrepareOK@stripe=1", time.Hour)
	send("parity/1", ok(4, 0))                                 // passes
	send("parity/1", ok(6, 0))                                 // held
	send("parity/1", msg.Commit{OpNum: 1})                     // behind a held one: held
	send("parity/2", ok(5, 1))                                 // held
	send("parity/2", ok(3, 0))                                 // behind: held (key op 5)
	send("parity/3", ok(2, 0))                                 // passes
	send("parity/3", ok(3, 1))                                 // held by the stripe filter
	send("parity/3", ok(4, 0))                                 // behind: held
	l.collect([]event{{from: "parity/1", m: ok(9, 0)}}, false) // unordered, held
	want := []node.Message{ok(4, 0), ok(2, 0)}
	if !slices.Equal(rec.got, want) {
		t.Fatalf("applied %v while the filters hold, want %v", rec.got, want)
	}
	if n := h.HoldStats(); n != 7 {
		t.Errorf("%d messages held, want 7", n)
	}
	// Expire the filters: the retries apply the held messages in key
	// order, one operation at a time: parity/3's (op 3, then 4 behind it),
	// parity/2's (op 5, its op 3 behind it), parity/1's op 6 and the Commit
	// behind it, then the unordered op 9.
	h.steer.mu.Lock()
	for i := range h.steer.fs {
		h.steer.fs[i].until = time.Now().Add(-time.Second)
	}
	h.steer.mu.Unlock()
	st := h.steer.stateOf(l)
	retry := func() {
		st.relAt = time.Time{} // drainStep has passed
		l.retrying = false
		l.collect([]event{{retry: true}}, false)
	}
	retry()
	want = append(want, ok(3, 1))
	if !slices.Equal(rec.got, want) {
		t.Fatalf("the first retry applied %v, want %v", rec.got, want)
	}
	// While they drain, a message of an operation applied already passes;
	// one of a later operation that the expired filters match joins them.
	l.collect([]event{{from: "parity/4", m: ok(2, 0)}}, false)
	l.collect([]event{{from: "parity/4", m: ok(8, 0)}}, false)
	want = append(want, ok(2, 0))
	if !slices.Equal(rec.got, want) {
		t.Fatalf("applied %v while draining, want %v", rec.got, want)
	}
	for range 10 {
		retry()
	}
	want = append(want, ok(4, 0), ok(5, 1), ok(3, 0), ok(6, 0), msg.Commit{OpNum: 1}, ok(8, 0), ok(9, 0))
	if !slices.Equal(rec.got, want) || len(l.held) != 0 {
		t.Fatalf("applied %v (%d still held), want %v", rec.got, len(l.held), want)
	}
	if n := h.steer.n.Load(); n != 0 {
		t.Errorf("%d filters and held messages counted, want 0", n)
	}
	send("parity/1", ok(7, 0)) // no filter: passes
	if got := rec.got[len(rec.got)-1]; got != ok(7, 0) {
		t.Fatalf("after the filters expired, %v was not applied at once", ok(7, 0))
	}
}
