package mc_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
)

// lagMsg is a message of TestLagOn: a put, or what the counter sends for
// it, early or not.
type lagMsg struct {
	Kind string
	N    uint64
}

func (m lagMsg) Hash(h *node.Hasher) { h.Bytes([]byte(m.Kind)); h.Uint64(m.N) }

// counter persists a count. It sends itself one put as it starts; each
// put raises the count and sends "early" and "held" to sink, of which it
// lets "early" leave ahead of its disk.
type counter struct{ n uint64 }

func (c *counter) Init(ctx node.Context) {
	if c.n == 0 {
		ctx.Send(ctx.Self(), lagMsg{Kind: "put"})
	}
}

func (c *counter) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	if m.(lagMsg).Kind == "put" {
		c.n++
		ctx.Send("sink", lagMsg{"early", c.n})
		ctx.Send("sink", lagMsg{"held", c.n})
	}
}

func (c *counter) Timer(node.Context, node.Timer) {}
func (c *counter) Clone() node.Node               { d := *c; return &d }
func (c *counter) Hash() uint64                   { return c.n + 1 }
func (c *counter) SendsEarly(m node.Message) bool { return m.(lagMsg).Kind == "early" }
func (c *counter) TrackChanges()                  {}
func (c *counter) Persist(w node.Writer)          { w.Put("n", binary.BigEndian.AppendUint64(nil, c.n)) }
func (c *counter) Restore(r node.Reader) (err error) {
	v, ok, err := r.Get("n")
	if ok {
		c.n = binary.BigEndian.Uint64(v)
	}
	return err
}

type sink struct{}

func (sink) Init(node.Context)                            {}
func (sink) Handle(node.Context, node.Addr, node.Message) {}
func (sink) Timer(node.Context, node.Timer)               {}
func (s sink) Clone() node.Node                           { return s }
func (sink) Hash() uint64                                 { return 7 }

// TestLagOn: a lagging node's early messages leave at once and the others
// at its Sync; a crash before the Sync restarts it from its state at the
// last one, its held messages lost.
func TestLagOn(t *testing.T) {
	s := mc.NewState(map[node.Addr]node.Node{"c": &counter{}, "sink": sink{}})
	s.Restartable(func(node.Addr, node.Node) node.Persistent { return &counter{} })
	s.LagOn("c")
	apply := func(s *mc.State, e mc.Event) *mc.State {
		t.Helper()
		n, err := s.Apply(e)
		if err != nil {
			t.Fatalf("%v: %v", e, err)
		}
		return n
	}
	toSink := func(s *mc.State) []string {
		var out []string
		for _, e := range s.Network() {
			if e.To == "sink" {
				out = append(out, e.Msg.(lagMsg).Kind)
			}
		}
		slices.Sort(out)
		return out
	}
	syncs := func(s *mc.State) int {
		n := 0
		for _, e := range s.Events(mc.Settings{}) {
			if e.Kind == mc.Sync {
				n++
			}
		}
		return n
	}
	put := s.Network()[0]
	ahead := apply(s, mc.Event{Kind: mc.Deliver, Env: put})
	if got := toSink(ahead); !slices.Equal(got, []string{"early"}) || syncs(ahead) != 1 {
		t.Fatalf("after the put: %v in flight to sink, %d syncs enabled; want [early] and 1", got, syncs(ahead))
	}
	if d := ahead.Durable("c").(*counter); d.n != 0 || ahead.Node("c").(*counter).n != 1 {
		t.Fatalf("durable count %d, count %d; want 0 and 1", d.n, ahead.Node("c").(*counter).n)
	}
	synced := apply(ahead, mc.Event{Kind: mc.Sync, Node: "c"})
	if got := toSink(synced); !slices.Equal(got, []string{"early", "held"}) || syncs(synced) != 0 {
		t.Fatalf("after the sync: %v in flight to sink, %d syncs enabled; want [early held] and 0", got, syncs(synced))
	}
	crashed := apply(ahead, mc.Event{Kind: mc.Crash, Node: "c"})
	back := apply(crashed, mc.Event{Kind: mc.Restart, Node: "c"})
	if n := back.Node("c").(*counter).n; n != 0 || !slices.Equal(toSink(back), []string{"early"}) {
		t.Fatalf("restarted before the sync: count %d, %v to sink; want 0 and [early]", n, toSink(back))
	}
	if synced.Fingerprint() == ahead.Fingerprint() {
		t.Fatal("a state ahead of its disk hashes like the synced one")
	}
}
