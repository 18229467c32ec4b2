package explore

import (
	"fmt"
	"time"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
)

// A toy system for the explorer's tests: "a" and "b" play ping-pong
// (each ping also streamed as a note), "f" floods "s" with spam, which
// stays in flight; the invariant fails once a ping reaches limit.
type ping struct{ N int }
type note struct{ N int }
type spam struct{ I int }
type tick struct{}

func (m ping) Hash(h *node.Hasher) { h.String("ping"); h.Int(m.N) }
func (m note) Hash(h *node.Hasher) { h.String("note"); h.Int(m.N) }
func (m spam) Hash(h *node.Hasher) { h.String("spam"); h.Int(m.I) }
func (tick) Hash(h *node.Hasher)   { h.String("tick") }

type toyNode struct {
	Peer  node.Addr
	Spam  int // messages sent at Init
	Last  int // last ping received
	Got   int // messages received
	Ticks int
}

func (n *toyNode) Init(ctx node.Context) {
	if ctx.Self() == "a" {
		ctx.Send(n.Peer, ping{1})
	}
	for i := range n.Spam {
		ctx.Send(n.Peer, spam{i})
	}
	if ctx.Self() == "b" {
		ctx.SetTimer(tick{}, time.Second, 2*time.Second)
	}
}

func (n *toyNode) Handle(ctx node.Context, from node.Addr, m node.Message) {
	n.Got++
	if p, ok := m.(ping); ok {
		n.Last = p.N
		ctx.Send(from, ping{p.N + 1})
		ctx.Stream(from, note(p))
	}
}

func (n *toyNode) Timer(_ node.Context, _ node.Timer) { n.Ticks++ }
func (n *toyNode) Clone() node.Node                   { c := *n; return &c }
func (n *toyNode) Hash() uint64 {
	h := node.NewHasher()
	h.String(string(n.Peer))
	h.Int(n.Spam)
	h.Int(n.Last)
	h.Int(n.Got)
	h.Int(n.Ticks)
	return h.Sum()
}

// toy is the toy scenario; its invariant fails once a ping reaches limit.
func toy(spams, limit int) *mc.Scenario {
	return &mc.Scenario{
		Name: "toy", System: "toy", Doc: "ping-pong beside a flood",
		Init: func() *mc.State {
			return mc.NewState(map[node.Addr]node.Node{"a": &toyNode{Peer: "b"}, "b": &toyNode{Peer: "a"},
				"f": &toyNode{Peer: "s", Spam: spams}, "s": &toyNode{Peer: "f"}})
		},
		Invariants: func() []mc.Predicate {
			return []mc.Predicate{mc.Pred("pings below limit", func(s *mc.State) (bool, string) {
				for _, a := range []node.Addr{"a", "b"} {
					if l := s.Node(a).(*toyNode).Last; l >= limit {
						return false, fmt.Sprintf("%s got ping %d", a, l)
					}
				}
				return true, "no ping reached " + fmt.Sprint(limit)
			})}
		},
		Settings: mc.Settings{MaxDrops: 1, MaxDuplicates: 1, MaxTimerFires: 1},
	}
}

func lookupOf(sc *mc.Scenario) func(string) (*mc.Scenario, error) {
	return func(name string) (*mc.Scenario, error) {
		if name == sc.Name {
			return sc, nil
		}
		return nil, fmt.Errorf("unknown scenario %q (have [%s])", name, sc.Name)
	}
}

// pingPath is n events of the ping-pong from sc's initial state, the
// spam left in flight.
func pingPath(sc *mc.Scenario, n int) []mc.Event {
	s := sc.Init()
	var out []mc.Event
	for range n {
		for _, e := range s.Events(sc.Settings) {
			if e.Kind == mc.Deliver && (e.Env.To == "a" || e.Env.To == "b") {
				out = append(out, e)
				next, err := s.Apply(e)
				if err != nil {
					panic(err)
				}
				s = next
				break
			}
		}
	}
	return out
}
