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
	node.HashAll(h, c.Replies)
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

// Config is a Paxos setup: servers, one client per value, how many
// ballots each server may lead for its put, and the injected bugs.
type Config struct {
	Servers int
	Values  []string
	// Proposals bounds the ballots each server may lead (0 counts as 1):
	// a bound of the model, not the number of proposals, which is one
	// per value.
	Proposals int
	// AcceptBelowPromise: an acceptor accepts below its promise.
	AcceptBelowPromise bool
	// LastPromise: a proposer takes the last promise's value, not the
	// one accepted at the highest ballot.
	LastPromise bool
}

// OneProposal is 3 servers and clients putting A and B, each server
// leading one ballot; TwoProposals lets each lead a second after a Retry.
func OneProposal() Config { return Config{Servers: 3, Values: []string{"A", "B"}, Proposals: 1} }

// TwoProposals is OneProposal with two ballots per server: the same two
// proposals (one per client), each server leading at most two ballots.
func TwoProposals() Config { return Config{Servers: 3, Values: []string{"A", "B"}, Proposals: 2} }

// TwoProposalsRetrying is the same two proposals with proposers that keep
// retrying: each server may lead up to ballots ballots, a Retry starting
// the next while nothing is decided. With n ballots no execution gives a
// server more than 5n+3 events (docs/model-checking.md), so with enough
// of them a server's depth is limited by the search, not by the model.
func TwoProposalsRetrying(ballots int) Config {
	return Config{Servers: 3, Values: []string{"A", "B"}, Proposals: ballots}
}

// Nodes builds servers servers and one client per value.
func Nodes(servers int, values []string, acceptBelowPromise bool) map[node.Addr]node.Node {
	return Config{Servers: servers, Values: values, AcceptBelowPromise: acceptBelowPromise}.Nodes()
}

// Nodes builds the configuration's servers and clients.
func (c Config) Nodes() map[node.Addr]node.Node {
	nodes := map[node.Addr]node.Node{}
	for i := 0; i < c.Servers; i++ {
		nodes[ServerAddr(i)] = &Server{ID: i, N: c.Servers, AcceptBelowPromise: c.AcceptBelowPromise,
			LastPromise: c.LastPromise, Proposals: c.Proposals}
	}
	for i, v := range c.Values {
		nodes[ClientAddr(i)] = &Client{ID: i, Servers: c.Servers, Value: v}
	}
	return nodes
}

// Agreement holds when no two servers decided different values. It reads
// only the servers' decided values (its projection, for mc's LMC).
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
	}).Projected(mc.Projection{
		Reads: func(_ node.Addr, n node.Node) bool { _, ok := n.(*Server); return ok },
		Key:   func(n node.Node) uint64 { return node.HashOf(decided(n.(*Server).Decided)) },
	})
}

// decided hashes a decided value, for Agreement's projection.
type decided string

func (d decided) Hash(h *node.Hasher) { h.String(string(d)) }

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

// ScenarioOf is the configuration's scenario: Scenario's network, Retry
// timers firing freely, and deliveries that change nothing no step
// (Settings.SkipNoOps).
func ScenarioOf(c Config) *mc.Scenario {
	name := fmt.Sprintf("paxos-%d-%d-p%d", c.Servers, len(c.Values), max(1, c.Proposals))
	if c.AcceptBelowPromise {
		name += "-accept-below-promise"
	}
	if c.LastPromise {
		name += "-last-promise"
	}
	return &mc.Scenario{
		Name:       name,
		Doc:        fmt.Sprintf("single-decree Paxos, %d servers, %d clients, %d ballots per server", c.Servers, len(c.Values), max(1, c.Proposals)),
		System:     "paxos",
		Init:       func() *mc.State { return mc.NewState(c.Nodes()) },
		Invariants: func() []mc.Predicate { return []mc.Predicate{Agreement(), mc.Linearizable(Register())} },
		Settings:   mc.Settings{MaxTimerFires: mc.Unlimited, SkipNoOps: true},
	}
}
