// Package wirecodec holds the wire form of the baselines' messages
// (baselines/shardedpaxos and baselines/rspaxos). Importing it registers
// the conversions with package wire, so that wire.MessageToProto and
// wire.MessageFromProto carry them; the protocol packages themselves do
// not import wire.
package wirecodec

import (
	"fmt"

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

// The messages whose wire form the baselines share.

func p1aToProto[V paxos.Value[V, I], I paxos.ID](m paxos.P1a[V, I]) *wire.PaxosP1A {
	return &wire.PaxosP1A{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), From: m.From}
}

func nackToProto[V paxos.Value[V, I], I paxos.ID](m paxos.Nack[V, I]) *wire.PaxosNack {
	return &wire.PaxosNack{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Promised: ballotToProto(m.Promised)}
}

func heartbeatToProto[V paxos.Value[V, I], I paxos.ID](m paxos.Heartbeat[V, I]) *wire.PaxosHeartbeat {
	return &wire.PaxosHeartbeat{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Commit: m.Commit, Gc: m.GC}
}

func heartbeatOKToProto[V paxos.Value[V, I], I paxos.ID](m paxos.HeartbeatOK[V, I]) *wire.PaxosHeartbeatOK {
	return &wire.PaxosHeartbeatOK{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Applied: m.Applied}
}

func redirectToProto[V paxos.Value[V, I], I paxos.ID](m paxos.Redirect[V, I]) *wire.PaxosRedirect {
	return &wire.PaxosRedirect{Seq: m.Seq, Group: int32(m.Group), Leader: int32(m.Leader)}
}

func p1aFromProto[V paxos.Value[V, I], I paxos.ID](d *decoder, r *wire.PaxosP1A, f string) paxos.P1a[V, I] {
	return paxos.P1a[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), From: r.GetFrom()}
}

func nackFromProto[V paxos.Value[V, I], I paxos.ID](d *decoder, r *wire.PaxosNack, f string) paxos.Nack[V, I] {
	return paxos.Nack[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
		Promised: d.ballot(r.GetPromised(), f+".promised")}
}

func heartbeatFromProto[V paxos.Value[V, I], I paxos.ID](d *decoder, r *wire.PaxosHeartbeat, f string) paxos.Heartbeat[V, I] {
	return paxos.Heartbeat[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
		Commit: r.GetCommit(), GC: r.GetGc()}
}

func heartbeatOKFromProto[V paxos.Value[V, I], I paxos.ID](d *decoder, r *wire.PaxosHeartbeatOK, f string) paxos.HeartbeatOK[V, I] {
	return paxos.HeartbeatOK[V, I]{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
		Applied: r.GetApplied()}
}

func redirectFromProto[V paxos.Value[V, I], I paxos.ID](d *decoder, r *wire.PaxosRedirect, f string) paxos.Redirect[V, I] {
	return paxos.Redirect[V, I]{Seq: r.GetSeq(), Group: d.index(r.GetGroup(), f+".group"), Leader: d.index(r.GetLeader(), f+".leader")}
}

// --- ShardedPaxos ---

func spValueToProto(v shardedpaxos.Value) *wire.ShardedPaxosValue {
	return &wire.ShardedPaxosValue{Noop: v.Noop, Client: v.Client, Seq: v.Seq, From: string(v.From), Ops: wire.OpsToProto(v.Ops)}
}

func shardedPaxosToProto(m node.Message) *wire.ShardedPaxosMessage {
	q := &wire.ShardedPaxosMessage{}
	switch m := m.(type) {
	case shardedpaxos.P1a:
		q.Body = &wire.ShardedPaxosMessage_P1A{P1A: p1aToProto(m)}
	case shardedpaxos.P1b:
		p := &wire.ShardedPaxosP1B{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &wire.ShardedPaxosAccepted{Slot: e.Slot, Ballot: ballotToProto(e.Ballot), Val: spValueToProto(e.Val)})
		}
		q.Body = &wire.ShardedPaxosMessage_P1B{P1B: p}
	case shardedpaxos.P2a:
		q.Body = &wire.ShardedPaxosMessage_P2A{P2A: &wire.ShardedPaxosP2A{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: spValueToProto(m.Val), Commit: m.Commit, Gc: m.GC}}
	case shardedpaxos.P2b:
		q.Body = &wire.ShardedPaxosMessage_P2B{P2B: &wire.ShardedPaxosP2B{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: &wire.ShardedPaxosID{Noop: m.Val.Noop, Client: m.Val.Client, Seq: m.Val.Seq}}}
	case shardedpaxos.Nack:
		q.Body = &wire.ShardedPaxosMessage_Nack{Nack: nackToProto(m)}
	case shardedpaxos.Heartbeat:
		q.Body = &wire.ShardedPaxosMessage_Heartbeat{Heartbeat: heartbeatToProto(m)}
	case shardedpaxos.HeartbeatOK:
		q.Body = &wire.ShardedPaxosMessage_HeartbeatOk{HeartbeatOk: heartbeatOKToProto(m)}
	case shardedpaxos.Learn:
		p := &wire.ShardedPaxosLearn{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &wire.ShardedPaxosChosen{Slot: e.Slot, Val: spValueToProto(e.Val)})
		}
		q.Body = &wire.ShardedPaxosMessage_Learn{Learn: p}
	case shardedpaxos.Redirect:
		q.Body = &wire.ShardedPaxosMessage_Redirect{Redirect: redirectToProto(m)}
	default:
		return nil
	}
	return q
}

func shardedPaxosFromProto(q *wire.ShardedPaxosMessage) (node.Message, error) {
	var d decoder
	var m node.Message
	switch b := q.GetBody().(type) {
	case *wire.ShardedPaxosMessage_P1A:
		m = p1aFromProto[shardedpaxos.Value, shardedpaxos.ID](&d, b.P1A, "sharded_paxos.p1a")
	case *wire.ShardedPaxosMessage_P1B:
		r, f := b.P1B, "sharded_paxos.p1b"
		p := shardedpaxos.P1b{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member")}
		for i, e := range r.GetEntries() {
			ef := fmt.Sprintf("%s.entries[%d]", f, i)
			if e == nil {
				d.fail(fieldErr(ef, "missing"))
				break
			}
			p.Entries = append(p.Entries, shardedpaxos.Accepted{Slot: e.GetSlot(), Ballot: d.ballot(e.GetBallot(), ef+".ballot"),
				Val: d.spValue(e.GetVal(), ef+".val")})
		}
		m = p
	case *wire.ShardedPaxosMessage_P2A:
		r, f := b.P2A, "sharded_paxos.p2a"
		m = shardedpaxos.P2a{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: d.spValue(r.GetVal(), f+".val"), Commit: r.GetCommit(), GC: r.GetGc()}
	case *wire.ShardedPaxosMessage_P2B:
		r, f := b.P2B, "sharded_paxos.p2b"
		if r.GetVal() == nil {
			d.fail(fieldErr(f+".val", "missing"))
		}
		id := r.GetVal()
		m = shardedpaxos.P2b{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: shardedpaxos.ID{Noop: id.GetNoop(), Client: id.GetClient(), Seq: id.GetSeq()}}
	case *wire.ShardedPaxosMessage_Nack:
		m = nackFromProto[shardedpaxos.Value, shardedpaxos.ID](&d, b.Nack, "sharded_paxos.nack")
	case *wire.ShardedPaxosMessage_Heartbeat:
		m = heartbeatFromProto[shardedpaxos.Value, shardedpaxos.ID](&d, b.Heartbeat, "sharded_paxos.heartbeat")
	case *wire.ShardedPaxosMessage_HeartbeatOk:
		m = heartbeatOKFromProto[shardedpaxos.Value, shardedpaxos.ID](&d, b.HeartbeatOk, "sharded_paxos.heartbeat_ok")
	case *wire.ShardedPaxosMessage_Learn:
		r, f := b.Learn, "sharded_paxos.learn"
		p := shardedpaxos.Learn{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member")}
		for i, e := range r.GetEntries() {
			ef := fmt.Sprintf("%s.entries[%d]", f, i)
			if e == nil {
				d.fail(fieldErr(ef, "missing"))
				break
			}
			p.Entries = append(p.Entries, shardedpaxos.Chosen{Slot: e.GetSlot(), Val: d.spValue(e.GetVal(), ef+".val")})
		}
		m = p
	case *wire.ShardedPaxosMessage_Redirect:
		m = redirectFromProto[shardedpaxos.Value, shardedpaxos.ID](&d, b.Redirect, "sharded_paxos.redirect")
	default:
		return nil, fieldErr("sharded_paxos.body", "missing or unknown message type")
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

// --- RSPaxos ---

func rsValueToProto(v rspaxos.Value) *wire.RSPaxosValue {
	return &wire.RSPaxosValue{Kind: wire.RSPaxosKind(v.Kind), Client: v.Client, Seq: v.Seq, From: string(v.From), Block: v.Block,
		Piece: v.Piece, HasPiece: v.Piece != nil}
}

func rsPaxosToProto(m node.Message) *wire.RSPaxosMessage {
	q := &wire.RSPaxosMessage{}
	switch m := m.(type) {
	case rspaxos.P1a:
		q.Body = &wire.RSPaxosMessage_P1A{P1A: p1aToProto(m)}
	case rspaxos.P1b:
		p := &wire.RSPaxosP1B{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &wire.RSPaxosAccepted{Slot: e.Slot, Ballot: ballotToProto(e.Ballot), Val: rsValueToProto(e.Val)})
		}
		q.Body = &wire.RSPaxosMessage_P1B{P1B: p}
	case rspaxos.P2a:
		q.Body = &wire.RSPaxosMessage_P2A{P2A: &wire.RSPaxosP2A{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: rsValueToProto(m.Val), Commit: m.Commit, Gc: m.GC}}
	case rspaxos.P2b:
		q.Body = &wire.RSPaxosMessage_P2B{P2B: &wire.RSPaxosP2B{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: &wire.RSPaxosID{Kind: wire.RSPaxosKind(m.Val.Kind), Client: m.Val.Client, Seq: m.Val.Seq}}}
	case rspaxos.Nack:
		q.Body = &wire.RSPaxosMessage_Nack{Nack: nackToProto(m)}
	case rspaxos.Heartbeat:
		q.Body = &wire.RSPaxosMessage_Heartbeat{Heartbeat: heartbeatToProto(m)}
	case rspaxos.HeartbeatOK:
		q.Body = &wire.RSPaxosMessage_HeartbeatOk{HeartbeatOk: heartbeatOKToProto(m)}
	case rspaxos.Learn:
		p := &wire.RSPaxosLearn{Ballot: ballotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &wire.RSPaxosChosen{Slot: e.Slot, Val: rsValueToProto(e.Val)})
		}
		q.Body = &wire.RSPaxosMessage_Learn{Learn: p}
	case rspaxos.PieceReply:
		q.Body = &wire.RSPaxosMessage_PieceReply{PieceReply: &wire.RSPaxosPieceReply{Member: int32(m.Member), Slot: m.Slot, Block: m.Block,
			Version: m.Version, Piece: m.Piece, HasPiece: m.Piece != nil, Missing: m.Missing}}
	case rspaxos.Redirect:
		q.Body = &wire.RSPaxosMessage_Redirect{Redirect: redirectToProto(m)}
	default:
		return nil
	}
	return q
}

func rsPaxosFromProto(q *wire.RSPaxosMessage) (node.Message, error) {
	var d decoder
	var m node.Message
	switch b := q.GetBody().(type) {
	case *wire.RSPaxosMessage_P1A:
		m = p1aFromProto[rspaxos.Value, rspaxos.ID](&d, b.P1A, "rs_paxos.p1a")
	case *wire.RSPaxosMessage_P1B:
		r, f := b.P1B, "rs_paxos.p1b"
		p := rspaxos.P1b{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member")}
		for i, e := range r.GetEntries() {
			ef := fmt.Sprintf("%s.entries[%d]", f, i)
			if e == nil {
				d.fail(fieldErr(ef, "missing"))
				break
			}
			p.Entries = append(p.Entries, rspaxos.Accepted{Slot: e.GetSlot(), Ballot: d.ballot(e.GetBallot(), ef+".ballot"),
				Val: d.rsValue(e.GetVal(), ef+".val")})
		}
		m = p
	case *wire.RSPaxosMessage_P2A:
		r, f := b.P2A, "rs_paxos.p2a"
		m = rspaxos.P2a{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: d.rsValue(r.GetVal(), f+".val"), Commit: r.GetCommit(), GC: r.GetGc()}
	case *wire.RSPaxosMessage_P2B:
		r, f := b.P2B, "rs_paxos.p2b"
		if r.GetVal() == nil {
			d.fail(fieldErr(f+".val", "missing"))
		}
		id := r.GetVal()
		m = rspaxos.P2b{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: rspaxos.ID{Kind: d.rsKind(id.GetKind(), f+".val.kind"), Client: id.GetClient(), Seq: id.GetSeq()}}
	case *wire.RSPaxosMessage_Nack:
		m = nackFromProto[rspaxos.Value, rspaxos.ID](&d, b.Nack, "rs_paxos.nack")
	case *wire.RSPaxosMessage_Heartbeat:
		m = heartbeatFromProto[rspaxos.Value, rspaxos.ID](&d, b.Heartbeat, "rs_paxos.heartbeat")
	case *wire.RSPaxosMessage_HeartbeatOk:
		m = heartbeatOKFromProto[rspaxos.Value, rspaxos.ID](&d, b.HeartbeatOk, "rs_paxos.heartbeat_ok")
	case *wire.RSPaxosMessage_Learn:
		r, f := b.Learn, "rs_paxos.learn"
		p := rspaxos.Learn{Ballot: d.ballot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member")}
		for i, e := range r.GetEntries() {
			ef := fmt.Sprintf("%s.entries[%d]", f, i)
			if e == nil {
				d.fail(fieldErr(ef, "missing"))
				break
			}
			p.Entries = append(p.Entries, rspaxos.Chosen{Slot: e.GetSlot(), Val: d.rsValue(e.GetVal(), ef+".val")})
		}
		m = p
	case *wire.RSPaxosMessage_PieceReply:
		r, f := b.PieceReply, "rs_paxos.piece_reply"
		m = rspaxos.PieceReply{Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(), Block: r.GetBlock(), Version: r.GetVersion(),
			Piece: wire.OptBytes(r.GetPiece(), r.GetHasPiece()), Missing: r.GetMissing()}
	case *wire.RSPaxosMessage_Redirect:
		m = redirectFromProto[rspaxos.Value, rspaxos.ID](&d, b.Redirect, "rs_paxos.redirect")
	default:
		return nil, fieldErr("rs_paxos.body", "missing or unknown message type")
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
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
