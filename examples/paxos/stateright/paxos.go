// Package stateright is single-decree Paxos as Stateright's
// examples/paxos.rs states it, message for message: PaxosActor servers
// (ids 0..n-1) and RegisterActor clients (ids n, n+1, ...) that put one
// value and then get, over an unordered network that neither loses nor
// duplicates (a multiset consumed on delivery), with no-op deliveries no
// step (mc.Settings.SkipNoOps, Stateright's ActorModel rule). With 3
// servers and 2 clients it has Stateright's 16,668 states.
package stateright

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
	"github.com/anishathalye/porcupine"
)

// Addr is the address of actor id (servers first, then clients).
func Addr(id int) node.Addr { return node.Addr(fmt.Sprintf("actor/%d", id)) }

func idOf(a node.Addr) int {
	var id int
	fmt.Sscanf(string(a), "actor/%d", &id)
	return id
}

// Ballot is (round, server id), ordered lexicographically.
type Ballot struct{ Round, ID int }

func (b Ballot) cmp(o Ballot) int {
	return cmp.Or(cmp.Compare(b.Round, o.Round), cmp.Compare(b.ID, o.ID))
}

// Proposal is (request id, requester id, value).
type Proposal struct {
	Req, Src int
	Value    byte
}

// Accepted is an optional (ballot, proposal); Ok false is None.
type Accepted struct {
	Ok     bool
	Ballot Ballot
	P      Proposal
}

// cmp orders as Rust's Option<(Ballot, Proposal)>: None first.
func (a Accepted) cmp(o Accepted) int {
	if a.Ok != o.Ok {
		if a.Ok {
			return 1
		}
		return -1
	}
	return cmp.Or(a.Ballot.cmp(o.Ballot), cmp.Compare(a.P.Req, o.P.Req),
		cmp.Compare(a.P.Src, o.P.Src), cmp.Compare(a.P.Value, o.P.Value))
}

func (a Accepted) hash(h *node.Hasher) {
	h.Bool(a.Ok)
	h.Int(a.Ballot.Round)
	h.Int(a.Ballot.ID)
	h.Int(a.P.Req)
	h.Int(a.P.Src)
	h.Int(int(a.P.Value))
}

// The messages: RegisterMsg's Put, Get, PutOk, GetOk and PaxosMsg's
// internal ones.
type (
	Put      struct{ Req, Value int }
	Get      struct{ Req int }
	PutOk    struct{ Req int }
	GetOk    struct{ Req, Value int }
	Prepare  struct{ Ballot Ballot }
	Prepared struct {
		Ballot Ballot
		Last   Accepted
	}
	Accept struct {
		Ballot Ballot
		P      Proposal
	}
	AcceptedMsg struct{ Ballot Ballot }
	Decided     struct {
		Ballot Ballot
		P      Proposal
	}
)

const (
	tagPut node.Tag = iota + 1
	tagGet
	tagPutOk
	tagGetOk
	tagPrepare
	tagPrepared
	tagAccept
	tagAccepted
	tagDecided
)

func ballot(h *node.Hasher, b Ballot) { h.Int(b.Round); h.Int(b.ID) }

// Hash implements node.Message.
func (m Put) Hash(h *node.Hasher) { h.Tag(tagPut); h.Int(m.Req); h.Int(m.Value) }

// Hash implements node.Message.
func (m Get) Hash(h *node.Hasher) { h.Tag(tagGet); h.Int(m.Req) }

// Hash implements node.Message.
func (m PutOk) Hash(h *node.Hasher) { h.Tag(tagPutOk); h.Int(m.Req) }

// Hash implements node.Message.
func (m GetOk) Hash(h *node.Hasher) { h.Tag(tagGetOk); h.Int(m.Req); h.Int(m.Value) }

// Hash implements node.Message.
func (m Prepare) Hash(h *node.Hasher) { h.Tag(tagPrepare); ballot(h, m.Ballot) }

// Hash implements node.Message.
func (m Prepared) Hash(h *node.Hasher) { h.Tag(tagPrepared); ballot(h, m.Ballot); m.Last.hash(h) }

// Hash implements node.Message.
func (m Accept) Hash(h *node.Hasher) {
	h.Tag(tagAccept)
	Accepted{Ok: true, Ballot: m.Ballot, P: m.P}.hash(h)
}

// Hash implements node.Message.
func (m AcceptedMsg) Hash(h *node.Hasher) { h.Tag(tagAccepted); ballot(h, m.Ballot) }

// Hash implements node.Message.
func (m Decided) Hash(h *node.Hasher) {
	h.Tag(tagDecided)
	Accepted{Ok: true, Ballot: m.Ballot, P: m.P}.hash(h)
}

// Server is PaxosActor: its state is PaxosState.
type Server struct {
	ID, N     int
	Peers     []int
	Ballot    Ballot
	Proposal  Proposal
	Proposing bool             // proposal is Some
	Prepares  map[int]Accepted // by server id; replaced, never modified
	Accepts   []int            // server ids, sorted
	Accepted  Accepted
	Decided   bool
}

// Init implements node.Node.
func (s *Server) Init(node.Context) {}

// Timer implements node.Node.
func (s *Server) Timer(node.Context, node.Timer) {}

// broadcast sends m to the peers (paxos.rs's peer_ids: every other server).
func (s *Server) broadcast(ctx node.Context, m node.Message) {
	for _, p := range s.Peers {
		ctx.Send(Addr(p), m)
	}
}

func majority(n int) int { return n/2 + 1 }

// Handle implements node.Node: PaxosActor's on_msg.
func (s *Server) Handle(ctx node.Context, from node.Addr, m node.Message) {
	src := idOf(from)
	if s.Decided {
		if g, ok := m.(Get); ok {
			ctx.Send(from, GetOk{Req: g.Req, Value: int(s.Accepted.P.Value)})
		}
		return
	}
	switch m := m.(type) {
	case Put:
		if s.Proposing {
			return
		}
		s.Proposing, s.Proposal = true, Proposal{Req: m.Req, Src: src, Value: byte(m.Value)}
		s.Accepts = nil
		s.Ballot = Ballot{s.Ballot.Round + 1, s.ID}
		s.Prepares = map[int]Accepted{s.ID: s.Accepted}
		s.broadcast(ctx, Prepare{Ballot: s.Ballot})
	case Prepare:
		if s.Ballot.cmp(m.Ballot) < 0 {
			s.Ballot = m.Ballot
			ctx.Send(from, Prepared{Ballot: m.Ballot, Last: s.Accepted})
		}
	case Prepared:
		if m.Ballot != s.Ballot {
			return
		}
		prep := make(map[int]Accepted, len(s.Prepares)+1)
		for k, v := range s.Prepares {
			prep[k] = v
		}
		prep[src] = m.Last
		s.Prepares = prep
		if len(prep) != majority(s.N) {
			return
		}
		best := Accepted{}
		for _, v := range prep {
			if v.cmp(best) > 0 {
				best = v
			}
		}
		p := s.Proposal
		if best.Ok {
			p = best.P
		}
		s.Proposing, s.Proposal = true, p
		s.Accepted = Accepted{Ok: true, Ballot: m.Ballot, P: p}
		s.Accepts = addID(s.Accepts, s.ID)
		s.broadcast(ctx, Accept{Ballot: m.Ballot, P: p})
	case Accept:
		if s.Ballot.cmp(m.Ballot) <= 0 {
			s.Ballot = m.Ballot
			s.Accepted = Accepted{Ok: true, Ballot: m.Ballot, P: m.P}
			ctx.Send(from, AcceptedMsg{Ballot: m.Ballot})
		}
	case AcceptedMsg:
		if m.Ballot != s.Ballot {
			return
		}
		s.Accepts = addID(s.Accepts, src)
		if len(s.Accepts) == majority(s.N) {
			s.Decided = true
			s.broadcast(ctx, Decided{Ballot: m.Ballot, P: s.Proposal})
			ctx.Send(Addr(s.Proposal.Src), PutOk{Req: s.Proposal.Req})
		}
	case Decided:
		s.Ballot = m.Ballot
		s.Accepted = Accepted{Ok: true, Ballot: m.Ballot, P: m.P}
		s.Decided = true
	}
}

// addID adds id to the sorted set ids, in a new slice.
func addID(ids []int, id int) []int {
	i, found := slices.BinarySearch(ids, id)
	if found {
		return ids
	}
	return slices.Insert(slices.Clone(ids), i, id)
}

// Clone implements node.Node; maps and slices are replaced, not modified.
func (s *Server) Clone() node.Node { c := *s; return &c }

// Hash implements node.Node.
func (s *Server) Hash() uint64 {
	h := node.NewHasher()
	ballot(h, s.Ballot)
	Accepted{Ok: s.Proposing, P: s.Proposal}.hash(h)
	h.Int(len(s.Prepares))
	for i := 0; i < s.N; i++ {
		if v, ok := s.Prepares[i]; ok {
			h.Int(i)
			v.hash(h)
		}
	}
	h.Int(len(s.Accepts))
	for _, a := range s.Accepts {
		h.Int(a)
	}
	s.Accepted.hash(h)
	h.Bool(s.Decided)
	return h.Sum()
}

// Client is RegisterActor's client with put_count 1: it puts, then gets.
// It keeps the values its gets returned (Stateright's tester keeps them).
type Client struct {
	ID, Servers int
	Awaiting    int // request id awaited; 0: none
	Ops         int // op_count
	Got         int // the get's value
}

// Init implements node.Node: Put(id, 'A' + id - servers) to server id % servers.
func (c *Client) Init(ctx node.Context) {
	c.Awaiting, c.Ops = c.ID, 1
	ctx.Send(Addr(c.ID%c.Servers), Put{Req: c.ID, Value: 'A' + c.ID - c.Servers})
}

// Timer implements node.Node.
func (c *Client) Timer(node.Context, node.Timer) {}

// Handle implements node.Node.
func (c *Client) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	switch m := m.(type) {
	case PutOk:
		if c.Awaiting != 0 && m.Req == c.Awaiting {
			req := (c.Ops + 1) * c.ID
			ctx.Send(Addr((c.ID+c.Ops)%c.Servers), Get{Req: req})
			c.Awaiting, c.Ops = req, c.Ops+1
		}
	case GetOk:
		if c.Awaiting != 0 && m.Req == c.Awaiting {
			c.Awaiting, c.Ops, c.Got = 0, c.Ops+1, m.Value
		}
	}
}

// Clone implements node.Node.
func (c *Client) Clone() node.Node { d := *c; return &d }

// Hash implements node.Node.
func (c *Client) Hash() uint64 {
	h := node.NewHasher()
	h.Int(c.ID)
	h.Int(c.Awaiting)
	h.Int(c.Ops)
	h.Int(c.Got)
	return h.Sum()
}

// Returned implements mc.Client.
func (c *Client) Returned() int { return c.Ops - 1 }

// Operation implements mc.Client: the put (input its Put message), then
// the get (input its Get, output the value).
func (c *Client) Operation(i int) (input, output any, ok bool) {
	switch i {
	case 0:
		in := Put{Req: c.ID, Value: 'A' + c.ID - c.Servers}
		if c.Returned() > 0 {
			return in, PutOk{Req: c.ID}, true
		}
		return in, nil, true
	case 1:
		in := Get{Req: 2 * c.ID}
		if c.Returned() > 1 {
			return in, c.Got, true
		}
		return in, nil, true
	}
	return nil, nil, false
}

// register is the sequential register the clients' history must be
// linearizable to: a get returns the last put's value (0 at first).
func register() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return 0 },
		Step: func(state, input, output any) (bool, any) {
			if p, ok := input.(Put); ok {
				return true, p.Value
			}
			return output == nil || output == state, state
		},
	}
}

// Scenario is Stateright's Paxos check: servers servers, clients clients,
// and the invariant Stateright checks, linearizability of the register.
func Scenario(servers, clients int) *mc.Scenario {
	return &mc.Scenario{
		Name:   fmt.Sprintf("paxos-stateright-%d-%d", servers, clients),
		Doc:    fmt.Sprintf("Stateright's paxos.rs, %d servers, %d clients", servers, clients),
		System: "paxos",
		Init: func() *mc.State {
			nodes := map[node.Addr]node.Node{}
			for i := 0; i < servers; i++ {
				srv := &Server{ID: i, N: servers}
				for p := 0; p < servers; p++ {
					if p != i {
						srv.Peers = append(srv.Peers, p)
					}
				}
				nodes[Addr(i)] = srv
			}
			for i := 0; i < clients; i++ {
				nodes[Addr(servers+i)] = &Client{ID: servers + i, Servers: servers}
			}
			return mc.NewState(nodes)
		},
		Invariants: func() []mc.Predicate { return []mc.Predicate{mc.Linearizable(register())} },
		Settings:   mc.Settings{SkipNoOps: true},
	}
}
