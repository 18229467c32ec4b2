package stateright

import (
	"cmp"

	"github.com/amalgam-store/amalgam/node"
)

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
