package wire

import (
	"fmt"
	"math"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// FieldError is a malformed field in a wire message. Field is the path of
// the field, as in "ops[2].offset".
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErr(field, format string, a ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, a...)}
}

// OpToProto converts an operation to its wire form.
func OpToProto(op msg.Op) *Op {
	return &Op{Kind: OpKind(op.Kind), Block: op.Block, Offset: int64(op.Offset), Length: int64(op.Length),
		Data: op.Data, Expect: op.Expect, Delta: op.Delta}
}

// OpsToProto converts a list of operations.
func OpsToProto(ops []msg.Op) []*Op {
	out := make([]*Op, len(ops))
	for i, op := range ops {
		out[i] = OpToProto(op)
	}
	return out
}

// OpFromProto decodes one operation. It checks what the wire form can get
// wrong (unknown kind, numbers that do not fit); field names the op in
// errors. Checking the op against a block size is msg.Op.Validate's job.
func OpFromProto(p *Op, field string) (msg.Op, error) {
	op, err := opFromProto(p)
	if err != nil {
		err.Field = field + err.Field
		return msg.Op{}, err
	}
	return op, nil
}

// opFromProto is OpFromProto with the error's field relative to the op
// ("" or ".kind"): the op's own name is only formatted for an error.
func opFromProto(p *Op) (msg.Op, *FieldError) {
	if p == nil {
		return msg.Op{}, &FieldError{Reason: "missing"}
	}
	if p.Kind <= OpKind_OP_KIND_UNSPECIFIED || p.Kind > OpKind_OP_KIND_CHECK {
		return msg.Op{}, &FieldError{Field: ".kind", Reason: fmt.Sprintf("unknown op kind %d", int32(p.Kind))}
	}
	if p.Offset < 0 || p.Offset > math.MaxInt32 {
		return msg.Op{}, &FieldError{Field: ".offset", Reason: fmt.Sprintf("%d is out of range", p.Offset)}
	}
	if p.Length < 0 || p.Length > math.MaxInt32 {
		return msg.Op{}, &FieldError{Field: ".length", Reason: fmt.Sprintf("%d is out of range", p.Length)}
	}
	op := msg.Op{Kind: msg.Kind(p.Kind), Block: p.Block, Offset: int(p.Offset), Length: int(p.Length),
		Data: p.Data, Expect: p.Expect, Delta: p.Delta}
	if len(op.Data) == 0 {
		op.Data = nil
	}
	if len(op.Expect) == 0 {
		op.Expect = nil
	}
	return op, nil
}

// OpsFromProto decodes a list of operations; errors name "ops[i].field".
func OpsFromProto(ps []*Op) ([]msg.Op, error) {
	out := make([]msg.Op, len(ps))
	for i, p := range ps {
		op, err := opFromProto(p)
		if err != nil {
			err.Field = fmt.Sprintf("ops[%d]", i) + err.Field
			return nil, err
		}
		out[i] = op
	}
	return out, nil
}

// ResultsToProto converts results.
func ResultsToProto(rs []msg.Result) []*Result {
	out := make([]*Result, len(rs))
	for i, r := range rs {
		out[i] = &Result{Data: r.Data, Value: r.Value, Ok: r.OK}
	}
	return out
}

// ResultsFromProto converts results back.
func ResultsFromProto(ps []*Result) []msg.Result {
	return convert(ps, func(p *Result) msg.Result {
		d := p.GetData()
		if len(d) == 0 {
			d = nil
		}
		return msg.Result{Data: d, Value: p.GetValue(), OK: p.GetOk()}
	})
}

func ints32(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

func intsFrom32(xs []int32) []int { return convert(xs, func(x int32) int { return int(x) }) }

// convert maps xs with f, keeping nil apart from empty.
func convert[T, U any](xs []T, f func(T) U) []U {
	if xs == nil {
		return nil
	}
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// MessageToProto converts a protocol message. It fails for message types
// the wire does not know.
func MessageToProto(m node.Message) (*Message, error) {
	switch m := m.(type) {
	case msg.Request:
		return &Message{Body: &Message_Request{Request: &Request{Client: m.Client, Seq: m.Seq, Ops: OpsToProto(m.Ops)}}}, nil
	case msg.Reply:
		return &Message{Body: &Message_Reply{Reply: replyToProto(m)}}, nil
	case msg.Prepare:
		return &Message{Body: &Message_Prepare{Prepare: prepareToProto(m)}}, nil
	case msg.PrepareOK:
		r := ref(m.Shard, m.Primary, m.OpNum, m.Stripe)
		r.Inc = m.Inc
		return &Message{Body: &Message_PrepareOk{PrepareOk: r}}, nil
	case msg.Commit:
		return &Message{Body: &Message_Commit{Commit: ref(m.Shard, m.Primary, m.OpNum, m.Stripe)}}, nil
	case msg.PrepareDrop:
		return &Message{Body: &Message_PrepareDrop{PrepareDrop: ref(m.Shard, m.Primary, m.OpNum, m.Stripe)}}, nil
	}
	if p, ok := reconfigToProto(m); ok {
		return p, nil
	}
	for _, c := range codecs {
		if p, ok := c.ToProto(m); ok {
			return p, nil
		}
	}
	return nil, fmt.Errorf("wire: no encoding for message type %T", m)
}

func prepareToProto(m msg.Prepare) *Prepare {
	p := &Prepare{Shard: int32(m.Shard), Primary: m.Primary, OpNum: m.OpNum,
		Stripe: int32(m.Stripe), Pos: int32(m.Pos), Delta: m.Delta, HasDelta: m.Delta != nil,
		Stripes: ints32(m.Stripes), Client: m.Client, Seq: m.Seq}
	if m.Reply != nil {
		p.Reply = replyToProto(*m.Reply)
	}
	return p
}

func prepareFromProto(q *Prepare) msg.Prepare {
	var delta []byte
	if q.GetHasDelta() {
		delta = q.GetDelta()
		if delta == nil {
			delta = []byte{}
		}
	}
	p := msg.Prepare{Shard: int(q.GetShard()), Primary: q.GetPrimary(), OpNum: q.GetOpNum(), Stripe: int(q.GetStripe()),
		Pos: int(q.GetPos()), Delta: delta, Stripes: intsFrom32(q.GetStripes()), Client: q.GetClient(), Seq: q.GetSeq()}
	if q.Reply != nil {
		r := replyFromProto(q.Reply)
		p.Reply = &r
	}
	return p
}

func replyToProto(m msg.Reply) *Reply {
	return &Reply{Seq: m.Seq, Results: ResultsToProto(m.Outcome.Results), Aborted: m.Outcome.Aborted, Err: m.Err}
}

func replyFromProto(r *Reply) msg.Reply {
	return msg.Reply{Seq: r.GetSeq(), Err: r.GetErr(),
		Outcome: msg.Outcome{Results: ResultsFromProto(r.GetResults()), Aborted: r.GetAborted()}}
}

func ref(shard int, primary, opNum uint64, stripe int) *PrepRef {
	return &PrepRef{Shard: int32(shard), Primary: primary, OpNum: opNum, Stripe: int32(stripe)}
}

// MessageFromProto converts a wire message back to a protocol message.
func MessageFromProto(p *Message) (node.Message, error) {
	switch b := p.GetBody().(type) {
	case *Message_Request:
		ops, err := OpsFromProto(b.Request.GetOps())
		if err != nil {
			return nil, err
		}
		if len(ops) == 0 {
			ops = nil
		}
		return msg.Request{Client: b.Request.GetClient(), Seq: b.Request.GetSeq(), Ops: ops}, nil
	case *Message_Reply:
		return replyFromProto(b.Reply), nil
	case *Message_Prepare:
		return prepareFromProto(b.Prepare), nil
	case *Message_PrepareOk:
		r := b.PrepareOk
		return msg.PrepareOK{Shard: int(r.GetShard()), Primary: r.GetPrimary(), OpNum: r.GetOpNum(), Stripe: int(r.GetStripe()), Inc: r.GetInc()}, nil
	case *Message_Commit:
		r := b.Commit
		return msg.Commit{Shard: int(r.GetShard()), Primary: r.GetPrimary(), OpNum: r.GetOpNum(), Stripe: int(r.GetStripe())}, nil
	case *Message_PrepareDrop:
		r := b.PrepareDrop
		return msg.PrepareDrop{Shard: int(r.GetShard()), Primary: r.GetPrimary(), OpNum: r.GetOpNum(), Stripe: int(r.GetStripe())}, nil
	}
	if m, ok, err := reconfigFromProto(p); ok {
		return m, err
	}
	for _, c := range codecs {
		if m, ok, err := c.FromProto(p); ok {
			return m, err
		}
	}
	return nil, fieldErr("msg.body", "missing or unknown message type")
}
