// Package wirecodec holds the wire form of the baselines' messages
// (baselines/shardedpaxos and baselines/rspaxos). Importing it registers
// the conversions with package wire, so that wire.MessageToProto and
// wire.MessageFromProto carry them; the protocol packages themselves do
// not import wire.
package wirecodec

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

func init() { wire.Register(codec{}) }

// codec converts the messages of baselines/shardedpaxos and
// baselines/rspaxos (their messages.go). Their timers are not messages and
// have no wire form.
type codec struct{}

// ToProto implements wire.Codec.
func (codec) ToProto(m node.Message) (*wire.Message, bool) {
	if p := shardedPaxosToProto(m); p != nil {
		return &wire.Message{Body: &wire.Message_ShardedPaxos{ShardedPaxos: p}}, true
	}
	if p := rsPaxosToProto(m); p != nil {
		return &wire.Message{Body: &wire.Message_RsPaxos{RsPaxos: p}}, true
	}
	return nil, false
}

// FromProto implements wire.Codec.
func (codec) FromProto(p *wire.Message) (m node.Message, ok bool, err error) {
	switch b := p.GetBody().(type) {
	case *wire.Message_ShardedPaxos:
		m, err := shardedPaxosFromProto(b.ShardedPaxos)
		return m, true, err
	case *wire.Message_RsPaxos:
		m, err := rsPaxosFromProto(b.RsPaxos)
		return m, true, err
	}
	return nil, false, nil
}

func ballotToProto(b paxos.Ballot) *wire.PaxosBallot {
	return &wire.PaxosBallot{Round: b.Round, Leader: int32(b.Leader)}
}

// A baseline's message is a oneof named body whose fields are named after
// the core's messages (p1a, p1b, ..., redirect), in both baselines. putBody
// sets the field named field; body returns the field that is set, and its
// name for errors (prefix.field), or nil when none is.

func putBody(q proto.Message, field string, body proto.Message) {
	r := q.ProtoReflect()
	r.Set(r.Descriptor().Fields().ByName(protoreflect.Name(field)), protoreflect.ValueOfMessage(body.ProtoReflect()))
}

func body(q proto.Message, prefix string) (proto.Message, string) {
	r := q.ProtoReflect()
	fd := r.WhichOneof(r.Descriptor().Oneofs().ByName("body"))
	if fd == nil {
		return nil, ""
	}
	return r.Get(fd).Message().Interface(), prefix + "." + string(fd.Name())
}

// each converts every element of s with f; nil for none.
func each[T, U any](s []T, f func(T) U) []U {
	var out []U
	for _, e := range s {
		out = append(out, f(e))
	}
	return out
}

// coreToProto encodes the messages whose wire form the baselines share,
// and returns their field in the body.
func coreToProto[V paxos.Value[V, I], I paxos.ID](m node.Message) (string, proto.Message) {
	switch m := m.(type) {
	case paxos.P1a[V, I]:
		return "p1a", &wire.PaxosP1A{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), From: m.From}
	case paxos.Nack[V, I]:
		return "nack", &wire.PaxosNack{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Promised: ballotToProto(m.Promised)}
	case paxos.Heartbeat[V, I]:
		return "heartbeat", &wire.PaxosHeartbeat{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Commit: m.Commit, Gc: m.GC}
	case paxos.HeartbeatOK[V, I]:
		return "heartbeat_ok", &wire.PaxosHeartbeatOK{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Applied: m.Applied}
	case paxos.Redirect[V, I]:
		return "redirect", &wire.PaxosRedirect{Seq: m.Seq, Group: int32(m.Group), Leader: int32(m.Leader)}
	}
	return "", nil
}

// The generated types in which the baselines' wire forms differ: each
// baseline has its own value (VP), ID (IP), accepted and chosen entries,
// and the four messages that carry them.
type (
	ballotMember interface {
		GetBallot() *wire.PaxosBallot
		GetMember() int32
	}
	acceptedProto[VP any] interface {
		comparable
		GetSlot() uint64
		GetBallot() *wire.PaxosBallot
		GetVal() VP
	}
	chosenProto[VP any] interface {
		comparable
		GetSlot() uint64
		GetVal() VP
	}
	entriesProto[E any] interface {
		ballotMember
		GetEntries() []E
	}
	p2aProto[VP any] interface {
		ballotMember
		GetSlot() uint64
		GetVal() VP
		GetCommit() uint64
		GetGc() uint64
	}
	p2bProto[IP comparable] interface {
		ballotMember
		GetSlot() uint64
		GetVal() IP
	}
)

// fromProto decodes a message of the paxos core from body, the field f of
// a baseline's message; val decodes a value (and reports a missing one),
// id an ID's fields. It returns nil for a body it does not know.
func fromProto[V paxos.Value[V, I], I paxos.ID, VP any, IP comparable, A acceptedProto[VP], C chosenProto[VP],
	P1B entriesProto[A], P2A p2aProto[VP], P2B p2bProto[IP], L entriesProto[C]](
	d *decoder, body proto.Message, f string, val func(VP, string) V, id func(IP, string) I) node.Message {
	switch r := body.(type) {
	case *wire.PaxosP1A:
		return paxos.P1a[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), From: r.GetFrom()}
	case *wire.PaxosNack:
		return paxos.Nack[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Promised: d.ballot(r.GetPromised(), f+".promised")}
	case *wire.PaxosHeartbeat:
		return paxos.Heartbeat[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Commit: r.GetCommit(), GC: r.GetGc()}
	case *wire.PaxosHeartbeatOK:
		return paxos.HeartbeatOK[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Applied: r.GetApplied()}
	case *wire.PaxosRedirect:
		return paxos.Redirect[V, I]{Seq: r.GetSeq(), Group: d.index(r.GetGroup(), f+".group"), Leader: d.index(r.GetLeader(), f+".leader")}
	case P1B:
		return paxos.P1b[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Entries: entries(d, r.GetEntries(), f, func(e A, ef string) paxos.Accepted[V] {
				return paxos.Accepted[V]{Slot: e.GetSlot(), Ballot: d.ballot(e.GetBallot(), ef+".ballot"), Val: val(e.GetVal(), ef+".val")}
			})}
	case P2A:
		return paxos.P2a[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: val(r.GetVal(), f+".val"), Commit: r.GetCommit(), GC: r.GetGc()}
	case P2B:
		var none IP
		if r.GetVal() == none {
			d.fail(fieldErr(f+".val", "missing"))
		}
		return paxos.P2b[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: id(r.GetVal(), f+".val")}
	case L:
		return paxos.Learn[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Entries: entries(d, r.GetEntries(), f, func(e C, ef string) paxos.Chosen[V] {
				return paxos.Chosen[V]{Slot: e.GetSlot(), Val: val(e.GetVal(), ef+".val")}
			})}
	}
	return nil
}

// entries decodes the entries of message field f with dec, failing on a
// missing one; nil for none.
func entries[E comparable, T any](d *decoder, es []E, f string, dec func(E, string) T) []T {
	var out []T
	var none E
	for i, e := range es {
		ef := fmt.Sprintf("%s.entries[%d]", f, i)
		if e == none {
			d.fail(fieldErr(ef, "missing"))
			break
		}
		out = append(out, dec(e, ef))
	}
	return out
}

// decode decodes q, a baseline's message named prefix, with dec.
func decode(q proto.Message, prefix string, dec func(d *decoder, body proto.Message, f string) node.Message) (node.Message, error) {
	var d decoder
	var m node.Message
	if b, f := body(q, prefix); b != nil {
		m = dec(&d, b, f)
	}
	if m == nil {
		return nil, fieldErr(prefix+".body", "missing or unknown message type")
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

// --- ShardedPaxos ---

func spValueToProto(v shardedpaxos.Value) *wire.ShardedPaxosValue {
	return &wire.ShardedPaxosValue{Noop: v.Noop, Client: v.Client, Seq: v.Seq, From: string(v.From), Ops: wire.OpsToProto(v.Ops)}
}

func shardedPaxosToProto(m node.Message) *wire.ShardedPaxosMessage {
	var f string
	var p proto.Message
	switch m := m.(type) {
	case shardedpaxos.P1b:
		f, p = "p1b", &wire.ShardedPaxosP1B{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member),
			Entries: each(m.Entries, func(e shardedpaxos.Accepted) *wire.ShardedPaxosAccepted {
				return &wire.ShardedPaxosAccepted{Slot: e.Slot, Ballot: ballotToProto(e.Ballot), Val: spValueToProto(e.Val)}
			})}
	case shardedpaxos.P2a:
		f, p = "p2a", &wire.ShardedPaxosP2A{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: spValueToProto(m.Val), Commit: m.Commit, Gc: m.GC}
	case shardedpaxos.P2b:
		f, p = "p2b", &wire.ShardedPaxosP2B{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: &wire.ShardedPaxosID{Noop: m.Val.Noop, Client: m.Val.Client, Seq: m.Val.Seq}}
	case shardedpaxos.Learn:
		f, p = "learn", &wire.ShardedPaxosLearn{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member),
			Entries: each(m.Entries, func(e shardedpaxos.Chosen) *wire.ShardedPaxosChosen {
				return &wire.ShardedPaxosChosen{Slot: e.Slot, Val: spValueToProto(e.Val)}
			})}
	default:
		f, p = coreToProto[shardedpaxos.Value, shardedpaxos.ID](m)
	}
	if p == nil {
		return nil
	}
	q := &wire.ShardedPaxosMessage{}
	putBody(q, f, p)
	return q
}

func shardedPaxosFromProto(q *wire.ShardedPaxosMessage) (node.Message, error) {
	return decode(q, "sharded_paxos", func(d *decoder, body proto.Message, f string) node.Message {
		return fromProto[shardedpaxos.Value, shardedpaxos.ID, *wire.ShardedPaxosValue, *wire.ShardedPaxosID,
			*wire.ShardedPaxosAccepted, *wire.ShardedPaxosChosen, *wire.ShardedPaxosP1B, *wire.ShardedPaxosP2A,
			*wire.ShardedPaxosP2B, *wire.ShardedPaxosLearn](d, body, f, d.spValue, func(q *wire.ShardedPaxosID, _ string) shardedpaxos.ID {
			return shardedpaxos.ID{Noop: q.GetNoop(), Client: q.GetClient(), Seq: q.GetSeq()}
		})
	})
}

// --- RSPaxos ---

func rsValueToProto(v rspaxos.Value) *wire.RSPaxosValue {
	return &wire.RSPaxosValue{Kind: wire.RSPaxosKind(v.Kind), Client: v.Client, Seq: v.Seq, From: string(v.From), Block: v.Block,
		Piece: v.Piece, HasPiece: v.Piece != nil}
}

func rsPaxosToProto(m node.Message) *wire.RSPaxosMessage {
	var f string
	var p proto.Message
	switch m := m.(type) {
	case rspaxos.P1b:
		f, p = "p1b", &wire.RSPaxosP1B{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member),
			Entries: each(m.Entries, func(e rspaxos.Accepted) *wire.RSPaxosAccepted {
				return &wire.RSPaxosAccepted{Slot: e.Slot, Ballot: ballotToProto(e.Ballot), Val: rsValueToProto(e.Val)}
			})}
	case rspaxos.P2a:
		f, p = "p2a", &wire.RSPaxosP2A{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: rsValueToProto(m.Val), Commit: m.Commit, Gc: m.GC}
	case rspaxos.P2b:
		f, p = "p2b", &wire.RSPaxosP2B{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: &wire.RSPaxosID{Kind: wire.RSPaxosKind(m.Val.Kind), Client: m.Val.Client, Seq: m.Val.Seq}}
	case rspaxos.Learn:
		f, p = "learn", &wire.RSPaxosLearn{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member),
			Entries: each(m.Entries, func(e rspaxos.Chosen) *wire.RSPaxosChosen {
				return &wire.RSPaxosChosen{Slot: e.Slot, Val: rsValueToProto(e.Val)}
			})}
	case rspaxos.PieceReply:
		f, p = "piece_reply", &wire.RSPaxosPieceReply{Member: int32(m.Member), Slot: m.Slot, Block: m.Block,
			Version: m.Version, Piece: m.Piece, HasPiece: m.Piece != nil, Missing: m.Missing}
	default:
		f, p = coreToProto[rspaxos.Value, rspaxos.ID](m)
	}
	if p == nil {
		return nil
	}
	q := &wire.RSPaxosMessage{}
	putBody(q, f, p)
	return q
}

func rsPaxosFromProto(q *wire.RSPaxosMessage) (node.Message, error) {
	return decode(q, "rs_paxos", func(d *decoder, body proto.Message, f string) node.Message {
		if r, ok := body.(*wire.RSPaxosPieceReply); ok {
			return rspaxos.PieceReply{Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(), Block: r.GetBlock(), Version: r.GetVersion(),
				Piece: wire.OptBytes(r.GetPiece(), r.GetHasPiece()), Missing: r.GetMissing()}
		}
		return fromProto[rspaxos.Value, rspaxos.ID, *wire.RSPaxosValue, *wire.RSPaxosID,
			*wire.RSPaxosAccepted, *wire.RSPaxosChosen, *wire.RSPaxosP1B, *wire.RSPaxosP2A,
			*wire.RSPaxosP2B, *wire.RSPaxosLearn](d, body, f, d.rsValue, func(q *wire.RSPaxosID, f string) rspaxos.ID {
			return rspaxos.ID{Kind: d.rsKind(q.GetKind(), f+".kind"), Client: q.GetClient(), Seq: q.GetSeq()}
		})
	})
}

// --- Decoding helpers ---

func fieldErr(field, format string, a ...any) error {
	return &wire.FieldError{Field: field, Reason: fmt.Sprintf(format, a...)}
}

// decoder keeps the first error of a message's decoding, so the fields
// can be decoded in one expression each.
type decoder struct{ err error }

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// index decodes a member, leader or group number: non-negative.
func (d *decoder) index(x int32, field string) int {
	if x < 0 {
		d.fail(fieldErr(field, "%d is negative", x))
		return 0
	}
	return int(x)
}

func (d *decoder) ballot(q *wire.PaxosBallot, field string) paxos.Ballot {
	if q == nil {
		d.fail(fieldErr(field, "missing"))
		return paxos.Ballot{}
	}
	return paxos.Ballot{Round: q.GetRound(), Leader: d.index(q.GetLeader(), field+".leader")}
}

func (d *decoder) spValue(q *wire.ShardedPaxosValue, field string) shardedpaxos.Value {
	if q == nil {
		d.fail(fieldErr(field, "missing"))
		return shardedpaxos.Value{}
	}
	var ops []msg.Op
	for i, p := range q.GetOps() {
		op, err := wire.OpFromProto(p, fmt.Sprintf("%s.ops[%d]", field, i))
		if err != nil {
			d.fail(err)
			break
		}
		ops = append(ops, op)
	}
	return shardedpaxos.Value{Noop: q.GetNoop(), Client: q.GetClient(), Seq: q.GetSeq(), From: node.Addr(q.GetFrom()), Ops: ops}
}

func (d *decoder) rsKind(k wire.RSPaxosKind, field string) rspaxos.Kind {
	switch k {
	case wire.RSPaxosKind_RS_PAXOS_KIND_NOOP:
		return rspaxos.Noop
	case wire.RSPaxosKind_RS_PAXOS_KIND_GET:
		return rspaxos.Get
	case wire.RSPaxosKind_RS_PAXOS_KIND_PUT:
		return rspaxos.Put
	}
	d.fail(fieldErr(field, "unknown kind %d", int32(k)))
	return rspaxos.Noop
}

func (d *decoder) rsValue(q *wire.RSPaxosValue, field string) rspaxos.Value {
	if q == nil {
		d.fail(fieldErr(field, "missing"))
		return rspaxos.Value{}
	}
	return rspaxos.Value{Kind: d.rsKind(q.GetKind(), field+".kind"), Client: q.GetClient(), Seq: q.GetSeq(), From: node.Addr(q.GetFrom()),
		Block: q.GetBlock(), Piece: wire.OptBytes(q.GetPiece(), q.GetHasPiece())}
}
