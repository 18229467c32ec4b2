package wire

import (
	"fmt"

	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Conversions of the baseline protocols' messages (baselines/shardedpaxos and
// baselines/rspaxos, messages.go). MessageToProto and MessageFromProto call
// them. Their timers are not messages and have no wire form.

// baselineToProto encodes the baseline messages; ok is false for other
// types.
func baselineToProto(m node.Message) (*Message, bool) {
	if p := shardedPaxosToProto(m); p != nil {
		return &Message{Body: &Message_ShardedPaxos{ShardedPaxos: p}}, true
	}
	if p := rsPaxosToProto(m); p != nil {
		return &Message{Body: &Message_RsPaxos{RsPaxos: p}}, true
	}
	return nil, false
}

// baselineFromProto decodes the baseline bodies of p; ok is false for
// other bodies.
func baselineFromProto(p *Message) (m node.Message, ok bool, err error) {
	switch b := p.GetBody().(type) {
	case *Message_ShardedPaxos:
		m, err := shardedPaxosFromProto(b.ShardedPaxos)
		return m, true, err
	case *Message_RsPaxos:
		m, err := rsPaxosFromProto(b.RsPaxos)
		return m, true, err
	}
	return nil, false, nil
}

func ballotToProto(round uint64, leader int) *PaxosBallot {
	return &PaxosBallot{Round: round, Leader: int32(leader)}
}

// --- ShardedPaxos ---

func spBallotToProto(b shardedpaxos.Ballot) *PaxosBallot { return ballotToProto(b.Round, b.Leader) }

func spValueToProto(v shardedpaxos.Value) *ShardedPaxosValue {
	return &ShardedPaxosValue{Noop: v.Noop, Client: v.Client, Seq: v.Seq, From: string(v.From), Ops: OpsToProto(v.Ops)}
}

func shardedPaxosToProto(m node.Message) *ShardedPaxosMessage {
	var body isShardedPaxosMessage_Body
	switch m := m.(type) {
	case shardedpaxos.P1a:
		body = &ShardedPaxosMessage_P1A{P1A: &PaxosP1A{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member), From: m.From}}
	case shardedpaxos.P1b:
		p := &ShardedPaxosP1B{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &ShardedPaxosAccepted{Slot: e.Slot, Ballot: spBallotToProto(e.Ballot), Val: spValueToProto(e.Val)})
		}
		body = &ShardedPaxosMessage_P1B{P1B: p}
	case shardedpaxos.P2a:
		body = &ShardedPaxosMessage_P2A{P2A: &ShardedPaxosP2A{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: spValueToProto(m.Val), Commit: m.Commit, Gc: m.GC}}
	case shardedpaxos.P2b:
		body = &ShardedPaxosMessage_P2B{P2B: &ShardedPaxosP2B{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: &ShardedPaxosID{Noop: m.Val.Noop, Client: m.Val.Client, Seq: m.Val.Seq}}}
	case shardedpaxos.Nack:
		body = &ShardedPaxosMessage_Nack{Nack: &PaxosNack{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member),
			Promised: spBallotToProto(m.Promised)}}
	case shardedpaxos.Heartbeat:
		body = &ShardedPaxosMessage_Heartbeat{Heartbeat: &PaxosHeartbeat{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member),
			Commit: m.Commit, Gc: m.GC}}
	case shardedpaxos.HeartbeatOK:
		body = &ShardedPaxosMessage_HeartbeatOk{HeartbeatOk: &PaxosHeartbeatOK{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member),
			Applied: m.Applied}}
	case shardedpaxos.Learn:
		p := &ShardedPaxosLearn{Ballot: spBallotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &ShardedPaxosChosen{Slot: e.Slot, Val: spValueToProto(e.Val)})
		}
		body = &ShardedPaxosMessage_Learn{Learn: p}
	case shardedpaxos.Redirect:
		body = &ShardedPaxosMessage_Redirect{Redirect: &PaxosRedirect{Seq: m.Seq, Group: int32(m.Group), Leader: int32(m.Leader)}}
	default:
		return nil
	}
	return &ShardedPaxosMessage{Body: body}
}

func shardedPaxosFromProto(q *ShardedPaxosMessage) (node.Message, error) {
	var d decoder
	var m node.Message
	switch b := q.GetBody().(type) {
	case *ShardedPaxosMessage_P1A:
		r, f := b.P1A, "sharded_paxos.p1a"
		m = shardedpaxos.P1a{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), From: r.GetFrom()}
	case *ShardedPaxosMessage_P1B:
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
	case *ShardedPaxosMessage_P2A:
		r, f := b.P2A, "sharded_paxos.p2a"
		m = shardedpaxos.P2a{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: d.spValue(r.GetVal(), f+".val"), Commit: r.GetCommit(), GC: r.GetGc()}
	case *ShardedPaxosMessage_P2B:
		r, f := b.P2B, "sharded_paxos.p2b"
		if r.GetVal() == nil {
			d.fail(fieldErr(f+".val", "missing"))
		}
		id := r.GetVal()
		m = shardedpaxos.P2b{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: shardedpaxos.ID{Noop: id.GetNoop(), Client: id.GetClient(), Seq: id.GetSeq()}}
	case *ShardedPaxosMessage_Nack:
		r, f := b.Nack, "sharded_paxos.nack"
		m = shardedpaxos.Nack{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Promised: d.spBallot(r.GetPromised(), f+".promised")}
	case *ShardedPaxosMessage_Heartbeat:
		r, f := b.Heartbeat, "sharded_paxos.heartbeat"
		m = shardedpaxos.Heartbeat{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Commit: r.GetCommit(), GC: r.GetGc()}
	case *ShardedPaxosMessage_HeartbeatOk:
		r, f := b.HeartbeatOk, "sharded_paxos.heartbeat_ok"
		m = shardedpaxos.HeartbeatOK{Ballot: d.spBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Applied: r.GetApplied()}
	case *ShardedPaxosMessage_Learn:
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
	case *ShardedPaxosMessage_Redirect:
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

func rsBallotToProto(b rspaxos.Ballot) *PaxosBallot { return ballotToProto(b.Round, b.Leader) }

func rsValueToProto(v rspaxos.Value) *RSPaxosValue {
	return &RSPaxosValue{Kind: RSPaxosKind(v.Kind), Client: v.Client, Seq: v.Seq, From: string(v.From), Block: v.Block,
		Piece: v.Piece, HasPiece: v.Piece != nil}
}

func rsPaxosToProto(m node.Message) *RSPaxosMessage {
	var body isRSPaxosMessage_Body
	switch m := m.(type) {
	case rspaxos.P1a:
		body = &RSPaxosMessage_P1A{P1A: &PaxosP1A{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member), From: m.From}}
	case rspaxos.P1b:
		p := &RSPaxosP1B{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &RSPaxosAccepted{Slot: e.Slot, Ballot: rsBallotToProto(e.Ballot), Val: rsValueToProto(e.Val)})
		}
		body = &RSPaxosMessage_P1B{P1B: p}
	case rspaxos.P2a:
		body = &RSPaxosMessage_P2A{P2A: &RSPaxosP2A{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: rsValueToProto(m.Val), Commit: m.Commit, Gc: m.GC}}
	case rspaxos.P2b:
		body = &RSPaxosMessage_P2B{P2B: &RSPaxosP2B{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member), Slot: m.Slot,
			Val: &RSPaxosID{Kind: RSPaxosKind(m.Val.Kind), Client: m.Val.Client, Seq: m.Val.Seq}}}
	case rspaxos.Nack:
		body = &RSPaxosMessage_Nack{Nack: &PaxosNack{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member),
			Promised: rsBallotToProto(m.Promised)}}
	case rspaxos.Heartbeat:
		body = &RSPaxosMessage_Heartbeat{Heartbeat: &PaxosHeartbeat{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member),
			Commit: m.Commit, Gc: m.GC}}
	case rspaxos.HeartbeatOK:
		body = &RSPaxosMessage_HeartbeatOk{HeartbeatOk: &PaxosHeartbeatOK{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member),
			Applied: m.Applied}}
	case rspaxos.Learn:
		p := &RSPaxosLearn{Ballot: rsBallotToProto(m.Ballot), Member: int32(m.Member)}
		for _, e := range m.Entries {
			p.Entries = append(p.Entries, &RSPaxosChosen{Slot: e.Slot, Val: rsValueToProto(e.Val)})
		}
		body = &RSPaxosMessage_Learn{Learn: p}
	case rspaxos.PieceReply:
		body = &RSPaxosMessage_PieceReply{PieceReply: &RSPaxosPieceReply{Member: int32(m.Member), Slot: m.Slot, Block: m.Block,
			Version: m.Version, Piece: m.Piece, HasPiece: m.Piece != nil, Missing: m.Missing}}
	case rspaxos.Redirect:
		body = &RSPaxosMessage_Redirect{Redirect: &PaxosRedirect{Seq: m.Seq, Group: int32(m.Group), Leader: int32(m.Leader)}}
	default:
		return nil
	}
	return &RSPaxosMessage{Body: body}
}

func rsPaxosFromProto(q *RSPaxosMessage) (node.Message, error) {
	var d decoder
	var m node.Message
	switch b := q.GetBody().(type) {
	case *RSPaxosMessage_P1A:
		r, f := b.P1A, "rs_paxos.p1a"
		m = rspaxos.P1a{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), From: r.GetFrom()}
	case *RSPaxosMessage_P1B:
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
	case *RSPaxosMessage_P2A:
		r, f := b.P2A, "rs_paxos.p2a"
		m = rspaxos.P2a{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: d.rsValue(r.GetVal(), f+".val"), Commit: r.GetCommit(), GC: r.GetGc()}
	case *RSPaxosMessage_P2B:
		r, f := b.P2B, "rs_paxos.p2b"
		if r.GetVal() == nil {
			d.fail(fieldErr(f+".val", "missing"))
		}
		id := r.GetVal()
		m = rspaxos.P2b{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(),
			Val: rspaxos.ID{Kind: d.rsKind(id.GetKind(), f+".val.kind"), Client: id.GetClient(), Seq: id.GetSeq()}}
	case *RSPaxosMessage_Nack:
		r, f := b.Nack, "rs_paxos.nack"
		m = rspaxos.Nack{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Promised: d.rsBallot(r.GetPromised(), f+".promised")}
	case *RSPaxosMessage_Heartbeat:
		r, f := b.Heartbeat, "rs_paxos.heartbeat"
		m = rspaxos.Heartbeat{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Commit: r.GetCommit(), GC: r.GetGc()}
	case *RSPaxosMessage_HeartbeatOk:
		r, f := b.HeartbeatOk, "rs_paxos.heartbeat_ok"
		m = rspaxos.HeartbeatOK{Ballot: d.rsBallot(r.GetBallot(), f+".ballot"), Member: d.index(r.GetMember(), f+".member"),
			Applied: r.GetApplied()}
	case *RSPaxosMessage_Learn:
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
	case *RSPaxosMessage_PieceReply:
		r, f := b.PieceReply, "rs_paxos.piece_reply"
		m = rspaxos.PieceReply{Member: d.index(r.GetMember(), f+".member"), Slot: r.GetSlot(), Block: r.GetBlock(), Version: r.GetVersion(),
			Piece: optBytes(r.GetPiece(), r.GetHasPiece()), Missing: r.GetMissing()}
	case *RSPaxosMessage_Redirect:
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

func (d *decoder) ballot(q *PaxosBallot, field string) (round uint64, leader int) {
	if q == nil {
		d.fail(fieldErr(field, "missing"))
		return 0, 0
	}
	return q.GetRound(), d.index(q.GetLeader(), field+".leader")
}

func (d *decoder) spBallot(q *PaxosBallot, field string) shardedpaxos.Ballot {
	r, l := d.ballot(q, field)
	return shardedpaxos.Ballot{Round: r, Leader: l}
}

func (d *decoder) rsBallot(q *PaxosBallot, field string) rspaxos.Ballot {
	r, l := d.ballot(q, field)
	return rspaxos.Ballot{Round: r, Leader: l}
}

func (d *decoder) spValue(q *ShardedPaxosValue, field string) shardedpaxos.Value {
	if q == nil {
		d.fail(fieldErr(field, "missing"))
		return shardedpaxos.Value{}
	}
	var ops []msg.Op
	for i, p := range q.GetOps() {
		op, err := OpFromProto(p, fmt.Sprintf("%s.ops[%d]", field, i))
		if err != nil {
			d.fail(err)
			break
		}
		ops = append(ops, op)
	}
	return shardedpaxos.Value{Noop: q.GetNoop(), Client: q.GetClient(), Seq: q.GetSeq(), From: node.Addr(q.GetFrom()), Ops: ops}
}

func (d *decoder) rsKind(k RSPaxosKind, field string) rspaxos.Kind {
	switch k {
	case RSPaxosKind_RS_PAXOS_KIND_NOOP:
		return rspaxos.Noop
	case RSPaxosKind_RS_PAXOS_KIND_GET:
		return rspaxos.Get
	case RSPaxosKind_RS_PAXOS_KIND_PUT:
		return rspaxos.Put
	}
	d.fail(fieldErr(field, "unknown kind %d", int32(k)))
	return rspaxos.Noop
}

func (d *decoder) rsValue(q *RSPaxosValue, field string) rspaxos.Value {
	if q == nil {
		d.fail(fieldErr(field, "missing"))
		return rspaxos.Value{}
	}
	return rspaxos.Value{Kind: d.rsKind(q.GetKind(), field+".kind"), Client: q.GetClient(), Seq: q.GetSeq(), From: node.Addr(q.GetFrom()),
		Block: q.GetBlock(), Piece: optBytes(q.GetPiece(), q.GetHasPiece())}
}
