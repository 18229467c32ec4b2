// Package wirecodec holds the wire form of the baselines' messages
// (baselines/shardedpaxos and baselines/rspaxos). Importing it registers
// the conversions with package wire, so that wire.MessageToProto and
// wire.MessageFromProto carry them; the protocol packages themselves do
// not import wire.
package wirecodec

import (
	"fmt"

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

func ballotToProto(round uint64, leader int) *wire.PaxosBallot {
	return &wire.PaxosBallot{Round: round, Leader: int32(leader)}
}

// --- ShardedPaxos ---

func spBallotToProto(b shardedpaxos.Ballot) *wire.PaxosBallot {
	return ballotToProto(b.Round, b.Leader)
}

func spValueToProto(v shardedpaxos.Value) *wire.ShardedPaxosValue {
	return &wire.ShardedPaxosValue{Noop: v.Noop, Client: v.Client, Seq: v.Seq, From: string(v.From), Ops: wire.OpsToProto(v.Ops)}
}

func shardedPaxosToProto(m node.Message) *wire.ShardedPaxosMessage {
	q := &wire.ShardedPaxosMessage{}
	switch m := m.(type) {
	case shardedpaxos.P1a:
		q.Body = &wire.ShardedPaxosMessage_P1A{P1A: &wire.PaxosP1A{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member), From: m.From}}
	case shardedpaxos.P1b:
		p := &wire.ShardedPaxosP1B{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &wire.ShardedPaxosAccepted{Slot: e.Slot, Ballot: spBallotToProto(e.Ballot), Val: spValueToProto(e.Val)})
		}
		q.Body = &wire.ShardedPaxosMessage_P1B{P1B: p}
	case shardedpaxos.P2a:
		q.Body = &wire.ShardedPaxosMessage_P2A{P2A: &wire.ShardedPaxosP2A{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: spValueToProto(m.Val), Commit: m.Commit, Gc: m.GC}}
	case shardedpaxos.P2b:
		q.Body = &wire.ShardedPaxosMessage_P2B{P2B: &wire.ShardedPaxosP2B{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: &wire.ShardedPaxosID{Noop: m.Val.Noop, Client: m.Val.Client, Seq: m.Val.Seq}}}
	case shardedpaxos.Nack:
		q.Body = &wire.ShardedPaxosMessage_Nack{Nack: &wire.PaxosNack{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member),
			Promised: spBallotToProto(m.Promised)}}
	case shardedpaxos.Heartbeat:
		q.Body = &wire.ShardedPaxosMessage_Heartbeat{Heartbeat: &wire.PaxosHeartbeat{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member),
			Commit: m.Commit, Gc: m.GC}}
	case shardedpaxos.HeartbeatOK:
		q.Body = &wire.ShardedPaxosMessage_HeartbeatOk{HeartbeatOk: &wire.PaxosHeartbeatOK{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member),
			Applied: m.Applied}}
	case shardedpaxos.Learn:
		p := &wire.ShardedPaxosLearn{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &wire.ShardedPaxosChosen{Slot: e.Slot, Val: spValueToProto(e.Val)})
		}
		q.Body = &wire.ShardedPaxosMessage_Learn{Learn: p}
	case shardedpaxos.Redirect:
		q.Body = &wire.ShardedPaxosMessage_Redirect{Redirect: &wire.PaxosRedirect{Seq: m.Seq, Group: int32(m.Group), Leader: int32(m.Leader)}}
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
		r, f := b.P1A, "sharded_paxos.p1a"
		m = shardedpaxos.P1a{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), From: r.GetFrom()}
	case *wire.ShardedPaxosMessage_P1B:
		r, f := b.P1B, "sharded_paxos.p1b"
		p := shardedpaxos.P1b{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member")}
		for i, e := range r.GetEntries() {
			ef := fmt.Sprintf("%s.entries[%d]", f, i)
			if e == nil {
				d.fail(fieldErr(ef, "missing"))
				break
			}
			p.Entries = append(p.Entries, shardedpaxos.Accepted{Slot: e.GetSlot(), Ballot: d.spBallot(e.GetBallot(), ef+".ballot"),
				Val: d.spValue(e.GetVal(), ef+".val")})
		}
		m = p
	case *wire.ShardedPaxosMessage_P2A:
		r, f := b.P2A, "sharded_paxos.p2a"
		m = shardedpaxos.P2a{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: d.spValue(r.GetVal(), f+".val"), Commit: r.GetCommit(), GC: r.GetGc()}
	case *wire.ShardedPaxosMessage_P2B:
		r, f := b.P2B, "sharded_paxos.p2b"
		if r.GetVal() == nil {
			d.fail(fieldErr(f+".val", "missing"))
		}
		id := r.GetVal()
		m = shardedpaxos.P2b{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: shardedpaxos.ID{Noop: id.GetNoop(), Client: id.GetClient(), Seq: id.GetSeq()}}
	case *wire.ShardedPaxosMessage_Nack:
		r, f := b.Nack, "sharded_paxos.nack"
		m = shardedpaxos.Nack{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Promised: d.spBallot(r.GetPromised(), f+".promised")}
	case *wire.ShardedPaxosMessage_Heartbeat:
		r, f := b.Heartbeat, "sharded_paxos.heartbeat"
		m = shardedpaxos.Heartbeat{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Commit: r.GetCommit(), GC: r.GetGc()}
	case *wire.ShardedPaxosMessage_HeartbeatOk:
		r, f := b.HeartbeatOk, "sharded_paxos.heartbeat_ok"
		m = shardedpaxos.HeartbeatOK{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Applied: r.GetApplied()}
	case *wire.ShardedPaxosMessage_Learn:
		r, f := b.Learn, "sharded_paxos.learn"
		p := shardedpaxos.Learn{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member")}
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
		r, f := b.Redirect, "sharded_paxos.redirect"
		m = shardedpaxos.Redirect{Seq: r.GetSeq(), Group: d.index(r.GetGroup(), f+".group"), Leader: d.index(r.GetLeader(), f+".leader")}
	default:
		return nil, fieldErr("sharded_paxos.body", "missing or unknown message type")
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

// --- RSPaxos ---

func rsBallotToProto(b rspaxos.Ballot) *wire.PaxosBallot { return ballotToProto(b.Round, b.Leader) }

func rsValueToProto(v rspaxos.Value) *wire.RSPaxosValue {
	return &wire.RSPaxosValue{Kind: wire.RSPaxosKind(v.Kind), Client: v.Client, Seq: v.Seq, From: string(v.From), Block: v.Block,
		Piece: v.Piece, HasPiece: v.Piece != nil}
}

func rsPaxosToProto(m node.Message) *wire.RSPaxosMessage {
	q := &wire.RSPaxosMessage{}
	switch m := m.(type) {
	case rspaxos.P1a:
		q.Body = &wire.RSPaxosMessage_P1A{P1A: &wire.PaxosP1A{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member), From: m.From}}
	case rspaxos.P1b:
		p := &wire.RSPaxosP1B{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &wire.RSPaxosAccepted{Slot: e.Slot, Ballot: rsBallotToProto(e.Ballot), Val: rsValueToProto(e.Val)})
		}
		q.Body = &wire.RSPaxosMessage_P1B{P1B: p}
	case rspaxos.P2a:
		q.Body = &wire.RSPaxosMessage_P2A{P2A: &wire.RSPaxosP2A{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: rsValueToProto(m.Val), Commit: m.Commit, Gc: m.GC}}
	case rspaxos.P2b:
		q.Body = &wire.RSPaxosMessage_P2B{P2B: &wire.RSPaxosP2B{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: &wire.RSPaxosID{Kind: wire.RSPaxosKind(m.Val.Kind), Client: m.Val.Client, Seq: m.Val.Seq}}}
	case rspaxos.Nack:
		q.Body = &wire.RSPaxosMessage_Nack{Nack: &wire.PaxosNack{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member),
			Promised: rsBallotToProto(m.Promised)}}
	case rspaxos.Heartbeat:
		q.Body = &wire.RSPaxosMessage_Heartbeat{Heartbeat: &wire.PaxosHeartbeat{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member),
			Commit: m.Commit, Gc: m.GC}}
	case rspaxos.HeartbeatOK:
		q.Body = &wire.RSPaxosMessage_HeartbeatOk{HeartbeatOk: &wire.PaxosHeartbeatOK{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member),
			Applied: m.Applied}}
	case rspaxos.Learn:
		p := &wire.RSPaxosLearn{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &wire.RSPaxosChosen{Slot: e.Slot, Val: rsValueToProto(e.Val)})
		}
		q.Body = &wire.RSPaxosMessage_Learn{Learn: p}
	case rspaxos.PieceReply:
		q.Body = &wire.RSPaxosMessage_PieceReply{PieceReply: &wire.RSPaxosPieceReply{Member: int32(m.Member), Slot: m.Slot, Block: m.Block,
			Version: m.Version, Piece: m.Piece, HasPiece: m.Piece != nil, Missing: m.Missing}}
	case rspaxos.Redirect:
		q.Body = &wire.RSPaxosMessage_Redirect{Redirect: &wire.PaxosRedirect{Seq: m.Seq, Group: int32(m.Group), Leader: int32(m.Leader)}}
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
		r, f := b.P1A, "rs_paxos.p1a"
		m = rspaxos.P1a{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), From: r.GetFrom()}
	case *wire.RSPaxosMessage_P1B:
		r, f := b.P1B, "rs_paxos.p1b"
		p := rspaxos.P1b{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member")}
		for i, e := range r.GetEntries() {
			ef := fmt.Sprintf("%s.entries[%d]", f, i)
			if e == nil {
				d.fail(fieldErr(ef, "missing"))
				break
			}
			p.Entries = append(p.Entries, rspaxos.Accepted{Slot: e.GetSlot(), Ballot: d.rsBallot(e.GetBallot(), ef+".ballot"),
				Val: d.rsValue(e.GetVal(), ef+".val")})
		}
		m = p
	case *wire.RSPaxosMessage_P2A:
		r, f := b.P2A, "rs_paxos.p2a"
		m = rspaxos.P2a{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: d.rsValue(r.GetVal(), f+".val"), Commit: r.GetCommit(), GC: r.GetGc()}
	case *wire.RSPaxosMessage_P2B:
		r, f := b.P2B, "rs_paxos.p2b"
		if r.GetVal() == nil {
			d.fail(fieldErr(f+".val", "missing"))
		}
		id := r.GetVal()
		m = rspaxos.P2b{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: rspaxos.ID{Kind: d.rsKind(id.GetKind(), f+".val.kind"), Client: id.GetClient(), Seq: id.GetSeq()}}
	case *wire.RSPaxosMessage_Nack:
		r, f := b.Nack, "rs_paxos.nack"
		m = rspaxos.Nack{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Promised: d.rsBallot(r.GetPromised(), f+".promised")}
	case *wire.RSPaxosMessage_Heartbeat:
		r, f := b.Heartbeat, "rs_paxos.heartbeat"
		m = rspaxos.Heartbeat{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Commit: r.GetCommit(), GC: r.GetGc()}
	case *wire.RSPaxosMessage_HeartbeatOk:
		r, f := b.HeartbeatOk, "rs_paxos.heartbeat_ok"
		m = rspaxos.HeartbeatOK{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Applied: r.GetApplied()}
	case *wire.RSPaxosMessage_Learn:
		r, f := b.Learn, "rs_paxos.learn"
		p := rspaxos.Learn{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member")}
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
		r, f := b.Redirect, "rs_paxos.redirect"
		m = rspaxos.Redirect{Seq: r.GetSeq(), Group: d.index(r.GetGroup(), f+".group"), Leader: d.index(r.GetLeader(), f+".leader")}
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

func (d *decoder) ballot(q *wire.PaxosBallot, field string) (round uint64, leader int) {
	if q == nil {
		d.fail(fieldErr(field, "missing"))
		return 0, 0
	}
	return q.GetRound(), d.index(q.GetLeader(), field+".leader")
}

func (d *decoder) spBallot(q *wire.PaxosBallot, field string) shardedpaxos.Ballot {
	r, l := d.ballot(q, field)
	return shardedpaxos.Ballot{Round: r, Leader: l}
}

func (d *decoder) rsBallot(q *wire.PaxosBallot, field string) rspaxos.Ballot {
	r, l := d.ballot(q, field)
	return rspaxos.Ballot{Round: r, Leader: l}
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
