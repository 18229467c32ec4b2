// Package paxos is single-decree Paxos written as node.Node values and
// checked with mc, as an example of the engine's public API: servers that
// are proposer, acceptor and learner at once, and closed-loop clients
// that put a value into the register Paxos decides and then get it. The
// clients implement mc.Client, so mc.Linearizable checks their history
// against a register model, beside the agreement invariant.
package paxos

import (
	"fmt"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// ServerAddr is the address of server i; ClientAddr of client i.
func ServerAddr(i int) node.Addr { return node.Addr(fmt.Sprintf("server/%d", i)) }

// ClientAddr is the address of client i.
func ClientAddr(i int) node.Addr { return node.Addr(fmt.Sprintf("client/%d", i)) }

// Ballot orders proposals: by round, then by server.
type Ballot struct{ Round, Server int }

func (b Ballot) less(o Ballot) bool {
	return b.Round < o.Round || b.Round == o.Round && b.Server < o.Server
}

func (b Ballot) String() string { return fmt.Sprintf("(%d,%d)", b.Round, b.Server) }

// The messages. Put and Get come from clients; a server proposes a put's
// value with Prepare and Accept; Decided tells the others.
type (
	Put     struct{ Value string }
	PutOK   struct{}
	Get     struct{}
	GetOK   struct{ Value string }
	Prepare struct{ Ballot Ballot }
	Promise struct {
		Ballot, AcceptedAt Ballot
		Value              string
	} // Value "": nothing accepted
	Accept struct {
		Ballot Ballot
		Value  string
	}
	Accepted struct{ Ballot Ballot }
	Decided  struct{ Value string }
	// Retry is the timer that starts a server's next ballot.
	Retry struct{}
)

// The messages' hash type tags. A protocol's tags need only differ from
// each other: no checker run mixes two protocols.
const (
	tagPut node.Tag = iota + 1
	tagPutOK
	tagGet
	tagGetOK
	tagPrepare
	tagPromise
	tagAccept
	tagAccepted
	tagDecided
	tagRetry
)

// Hash implements node.Message.
func (m Put) Hash(h *node.Hasher) { h.Tag(tagPut); h.String(m.Value) }

// Hash implements node.Message.
func (PutOK) Hash(h *node.Hasher) { h.Tag(tagPutOK) }

// Hash implements node.Message.
func (Get) Hash(h *node.Hasher) { h.Tag(tagGet) }

// Hash implements node.Message.
func (m GetOK) Hash(h *node.Hasher) { h.Tag(tagGetOK); h.String(m.Value) }

// Hash implements node.Message.
func (m Prepare) Hash(h *node.Hasher) { h.Tag(tagPrepare); hashBallot(h, m.Ballot) }

// Hash implements node.Message.
func (m Promise) Hash(h *node.Hasher) {
	h.Tag(tagPromise)
	hashBallot(h, m.Ballot)
	hashBallot(h, m.AcceptedAt)
	h.String(m.Value)
}

// Hash implements node.Message.
func (m Accept) Hash(h *node.Hasher) { h.Tag(tagAccept); hashBallot(h, m.Ballot); h.String(m.Value) }

// Hash implements node.Message.
func (m Accepted) Hash(h *node.Hasher) { h.Tag(tagAccepted); hashBallot(h, m.Ballot) }

// Hash implements node.Message.
func (m Decided) Hash(h *node.Hasher) { h.Tag(tagDecided); h.String(m.Value) }

// Hash implements node.Timer.
func (Retry) Hash(h *node.Hasher) { h.Tag(tagRetry) }

func hashBallot(h *node.Hasher, b Ballot) { h.Int(b.Round); h.Int(b.Server) }

// Server is one Paxos server. Slices are copied before they change, so a
// clone shares them.
type Server struct {
	ID, N int
	// AcceptBelowPromise is an injected bug: the acceptor accepts a
	// ballot lower than the one it promised.
	AcceptBelowPromise bool
	// LastPromise is an injected bug: with a majority of promises, the
	// proposer takes the value of the promise that arrived last (if it
	// has one) instead of the one accepted at the highest ballot.
	LastPromise bool
	// Proposals is how many ballots the server may lead for its client's
	// put (0 counts as 1): after the first, a Retry timer starts the next
	// while nothing is decided.
	Proposals int

	// acceptor
	Promised   Ballot
	AcceptedAt Ballot
	Accepted   string
	// proposer: the ballot it leads, the client whose put it proposes,
	// the promises and acceptances it has (by server)
	Ballot   Ballot
	Client   node.Addr
	Value    string
	Promises []*Promise
	Accepts  []bool
	Sent     bool // Accept sent
	Led      int  // ballots led
	// learner
	Decided string
}

// Init implements node.Node.
func (s *Server) Init(node.Context) {}

// Timer implements node.Node: a Retry leads the next ballot unless a
// value is decided.
func (s *Server) Timer(ctx node.Context, t node.Timer) {
	if _, ok := t.(Retry); ok && s.Decided == "" {
		s.propose(ctx)
	}
}

// peers sends m to every other server: a server acts on its own
// messages at once.
func (s *Server) peers(ctx node.Context, m node.Message) {
	for i := 0; i < s.N; i++ {
		if i != s.ID {
			ctx.Send(ServerAddr(i), m)
		}
	}
}

func count[T any](xs []T, ok func(T) bool) int {
	n := 0
	for _, x := range xs {
		if ok(x) {
			n++
		}
	}
	return n
}

// Handle implements node.Node.
func (s *Server) Handle(ctx node.Context, from node.Addr, m node.Message) {
	switch m := m.(type) {
	case Put:
		if s.Decided != "" {
			ctx.Send(from, PutOK{})
			return
		}
		if s.Client != "" {
			return // one client per server
		}
		s.Client, s.Value = from, m.Value
		s.propose(ctx)
	case Get:
		if s.Decided != "" {
			ctx.Send(from, GetOK{Value: s.Decided})
		}
	case Prepare:
		if p := s.promise(m.Ballot); p != nil {
			ctx.Send(from, *p)
		}
	case Promise:
		s.promised(ctx, serverOf(from), &m)
	case Accept:
		if s.accept(m.Ballot, m.Value) {
			ctx.Send(from, Accepted{Ballot: m.Ballot})
		}
	case Accepted:
		s.accepted(ctx, serverOf(from), m.Ballot)
	case Decided:
		if s.Decided == "" {
			s.Decided = m.Value
		}
	}
}

// propose leads a new ballot for the client's value.
func (s *Server) propose(ctx node.Context) {
	s.Led++
	s.Ballot = Ballot{Round: s.Promised.Round + 1, Server: s.ID}
	s.Promises, s.Accepts, s.Sent = make([]*Promise, s.N), make([]bool, s.N), false
	if s.Led < s.Proposals {
		ctx.SetTimer(Retry{}, time.Second, 2*time.Second)
	}
	s.peers(ctx, Prepare{Ballot: s.Ballot})
	s.promised(ctx, s.ID, s.promise(s.Ballot))
}

// promise is the acceptor's answer to a Prepare at b, or nil.
func (s *Server) promise(b Ballot) *Promise {
	if !s.Promised.less(b) {
		return nil
	}
	s.Promised = b
	return &Promise{Ballot: b, AcceptedAt: s.AcceptedAt, Value: s.Accepted}
}

// promised records server i's promise p (nil: none). With a majority,
// the proposer sends Accept with the value accepted at the highest
// ballot, if any, or its client's.
func (s *Server) promised(ctx node.Context, i int, p *Promise) {
	if p == nil || p.Ballot != s.Ballot || s.Sent {
		return
	}
	s.Promises = append([]*Promise(nil), s.Promises...)
	s.Promises[i] = p
	if count(s.Promises, func(p *Promise) bool { return p != nil }) <= s.N/2 {
		return
	}
	var best *Promise
	for _, p := range s.Promises {
		if p != nil && p.Value != "" && (best == nil || best.AcceptedAt.less(p.AcceptedAt)) {
			best = p
		}
	}
	if s.LastPromise {
		best = nil
		if p.Value != "" {
			best = p
		}
	}
	if best != nil {
		s.Value = best.Value
	}
	s.Sent = true
	s.peers(ctx, Accept{Ballot: s.Ballot, Value: s.Value})
	if s.accept(s.Ballot, s.Value) {
		s.accepted(ctx, s.ID, s.Ballot)
	}
}

// accept is the acceptor taking value v at ballot b, unless it promised
// a higher ballot.
func (s *Server) accept(b Ballot, v string) bool {
	if b.less(s.Promised) && !s.AcceptBelowPromise {
		return false
	}
	if s.Promised.less(b) {
		s.Promised = b
	}
	s.AcceptedAt, s.Accepted = b, v
	return true
}

// accepted records that server i accepted the proposal at b; with a
// majority the value is decided.
func (s *Server) accepted(ctx node.Context, i int, b Ballot) {
	if b != s.Ballot || s.Decided != "" {
		return
	}
	s.Accepts = append([]bool(nil), s.Accepts...)
	s.Accepts[i] = true
	if count(s.Accepts, func(ok bool) bool { return ok }) > s.N/2 {
		s.Decided = s.Value
		ctx.Send(s.Client, PutOK{})
		s.peers(ctx, Decided{Value: s.Value})
	}
}

func serverOf(a node.Addr) int {
	var i int
	if _, err := fmt.Sscanf(string(a), "server/%d", &i); err != nil {
		panic(err)
	}
	return i
}

// Clone implements node.Node.
func (s *Server) Clone() node.Node { c := *s; return &c }

// Hash implements node.Node.
func (s *Server) Hash() uint64 {
	h := node.NewHasher()
	h.Int(s.ID)
	hashBallot(h, s.Promised)
	hashBallot(h, s.AcceptedAt)
	h.String(s.Accepted)
	hashBallot(h, s.Ballot)
	h.String(string(s.Client))
	h.String(s.Value)
	h.Int(len(s.Promises))
	for _, p := range s.Promises {
		h.Bool(p != nil)
		if p != nil {
			p.Hash(h)
		}
	}
	for _, a := range s.Accepts {
		h.Bool(a)
	}
	h.Bool(s.Sent)
	h.Int(s.Led)
	h.String(s.Decided)
	return h.Sum()
}

// Describe implements node.Describer.
func (s *Server) Describe() string {
	d := fmt.Sprintf("promised %v, accepted %q at %v", s.Promised, s.Accepted, s.AcceptedAt)
	if s.Client != "" {
		d += fmt.Sprintf(", proposing %q at %v (%d promises, %d accepts)", s.Value, s.Ballot,
			count(s.Promises, func(p *Promise) bool { return p != nil }), count(s.Accepts, func(ok bool) bool { return ok }))
	}
	if s.Decided != "" {
		d += fmt.Sprintf(", decided %q", s.Decided)
	}
	return d
}
