package paxos

import (
	"fmt"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
	"github.com/anishathalye/porcupine"
)

// Client puts its value at one server, then gets the register's value
// from the next one. It implements mc.Client: its operations are the
// inputs Put and Get, their outputs PutOK and GetOK.
type Client struct {
	ID, Servers int
	Value       string
	Replies     []node.Message // PutOK, then GetOK
}

func (c *Client) server(k int) node.Addr { return ServerAddr((c.ID + k) % c.Servers) }

// Init implements node.Node.
func (c *Client) Init(ctx node.Context) { ctx.Send(c.server(0), Put{Value: c.Value}) }

// Handle implements node.Node.
func (c *Client) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	switch m.(type) {
	case PutOK:
		if len(c.Replies) == 0 {
			c.Replies = []node.Message{m}
			ctx.Send(c.server(1), Get{})
		}
	case GetOK:
		if len(c.Replies) == 1 {
			c.Replies = append(c.Replies[:1:1], m)
		}
	}
}

// Timer implements node.Node.
func (c *Client) Timer(node.Context, node.Timer) {}

// Clone implements node.Node.
func (c *Client) Clone() node.Node { d := *c; return &d }

// Hash implements node.Node.
func (c *Client) Hash() uint64 {
	h := node.NewHasher()
	h.Int(c.ID)
	h.String(c.Value)
	for _, r := range c.Replies {
		r.Hash(h)
	}
	return h.Sum()
}

// Describe implements node.Describer.
func (c *Client) Describe() string {
	return fmt.Sprintf("put %q, replies %s", c.Value, mc.Describe(c.Replies))
}

// Returned implements mc.Client.
func (c *Client) Returned() int { return len(c.Replies) }

// Operation implements mc.Client.
func (c *Client) Operation(i int) (input, output any, ok bool) {
	var in any
	switch i {
	case 0:
		in = Put{Value: c.Value}
	case 1:
		in = Get{}
	default:
		return nil, nil, false
	}
	if i < len(c.Replies) {
		return in, c.Replies[i], true
	}
	return in, nil, true
}

// Register is the sequential specification of the clients' operations
// for porcupine: a register whose Get returns the last Put ("" at
// first). A nil output is a pending operation, which may take effect or
// not.
func Register() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return "" },
		Step: func(state, input, output any) (bool, any) {
			switch in := input.(type) {
			case Put:
				return true, in.Value
			case Get:
				r, done := output.(GetOK)
				return !done || r.Value == state, state
			}
			return false, state
		},
		DescribeOperation: func(input, output any) string {
			out := "pending"
			if output != nil {
				out = mc.Describe(output)
			}
			return mc.Describe(input) + " -> " + out
		},
	}
}

// Nodes builds servers servers and one client per value.
func Nodes(servers int, values []string, acceptBelowPromise bool) map[node.Addr]node.Node {
	nodes := map[node.Addr]node.Node{}
	for i := 0; i < servers; i++ {
		nodes[ServerAddr(i)] = &Server{ID: i, N: servers, AcceptBelowPromise: acceptBelowPromise}
	}
	for i, v := range values {
		nodes[ClientAddr(i)] = &Client{ID: i, Servers: servers, Value: v}
	}
	return nodes
}

// Agreement holds when no two servers decided different values.
func Agreement() mc.Predicate {
	return mc.Pred("servers decide one value", func(s *mc.State) (bool, string) {
		var first node.Addr
		var v string
		for i, a := range s.Addrs() {
			if x, ok := s.NodeAt(i).(*Server); ok && x.Decided != "" {
				if v != "" && x.Decided != v {
					return false, fmt.Sprintf("%s decided %q, %s decided %q", first, v, a, x.Decided)
				}
				first, v = a, x.Decided
			}
		}
		return true, "at most one value decided"
	})
}

// Scenario is Paxos with servers servers and one client per value, over
// a network that reorders but neither loses nor duplicates messages.
func Scenario(servers int, values []string, acceptBelowPromise bool) *mc.Scenario {
	return &mc.Scenario{
		Name:       fmt.Sprintf("paxos-%d-%d", servers, len(values)),
		Doc:        fmt.Sprintf("single-decree Paxos, %d servers, %d clients putting then getting", servers, len(values)),
		System:     "paxos",
		Init:       func() *mc.State { return mc.NewState(Nodes(servers, values, acceptBelowPromise)) },
		Invariants: func() []mc.Predicate { return []mc.Predicate{Agreement(), mc.Linearizable(Register())} },
	}
}
