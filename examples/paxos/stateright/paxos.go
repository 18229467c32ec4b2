// Package stateright is single-decree Paxos as Stateright's
// examples/paxos.rs states it, message for message: PaxosActor servers
// (ids 0..n-1) and RegisterActor clients (ids n, n+1, ...) that put one
// value and then get, over an unordered network that neither loses nor
// duplicates (a multiset consumed on delivery), with no-op deliveries no
// step (mc.Settings.SkipNoOps, Stateright's ActorModel rule). With 3
// servers and 2 clients it has Stateright's 16,668 states.
package stateright

import (
	"fmt"
	"slices"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
)

// Addr is the address of actor id (servers first, then clients).
func Addr(id int) node.Addr { return node.Addr(fmt.Sprintf("actor/%d", id)) }

func idOf(a node.Addr) int {
	var id int
	fmt.Sscanf(string(a), "actor/%d", &id)
	return id
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
