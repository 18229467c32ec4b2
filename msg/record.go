package msg

import (
	"bytes"

	"github.com/amalgam-store/amalgam/node"
)

// Fixed binary records (node.Enc) of the messages servers persist. A
// message's record holds the fields its hash holds after the tag, written
// by one method to either (node.Fields).

// Encode appends r to e.
func (r Reply) Encode(e *node.Enc) { r.fields(e) }

// fields writes r's fields: its record, and its hash after the tag.
func (r Reply) fields(f node.Fields) {
	f.Uint64(r.Seq)
	f.Bool(r.Outcome.Aborted)
	f.Uint64(uint64(len(r.Outcome.Results)))
	for _, x := range r.Outcome.Results {
		x.fields(f)
	}
	f.String(r.Err)
}

func (r Result) fields(f node.Fields) {
	f.Bytes(r.Data)
	f.Uint64(r.Value)
	f.Bool(r.OK)
}

// DecodeReply reads what Reply.Encode wrote.
func DecodeReply(d *node.Dec) Reply {
	r := Reply{Seq: d.Uint64()}
	r.Outcome.Aborted = d.Bool()
	if n := d.Len(); n > 0 {
		r.Outcome.Results = make([]Result, n)
		for i := range r.Outcome.Results {
			r.Outcome.Results[i] = Result{Data: d.Bytes(), Value: d.Uint64(), OK: d.Bool()}
		}
	}
	r.Err = d.String()
	return r
}

// Encode appends p to e.
func (p Prepare) Encode(e *node.Enc) { p.fields(e) }

// fields writes p's fields: its record, and its hash after the tag.
func (p Prepare) fields(f node.Fields) {
	f.Int(p.Shard)
	f.Uint64(p.Primary)
	f.Uint64(p.OpNum)
	f.Int(p.Stripe)
	f.Int(p.Pos)
	f.Bytes(p.Delta)
	f.Uint64(uint64(len(p.Stripes)))
	for _, s := range p.Stripes {
		f.Int(s)
	}
	f.Uint64(p.Client)
	f.Uint64(p.Seq)
	f.Bool(p.Reply != nil)
	if p.Reply != nil {
		p.Reply.fields(f)
	}
}

// Same reports whether p and q are the same PREPARE, field by field.
func (p Prepare) Same(q Prepare) bool {
	if !bytes.Equal(p.Delta, q.Delta) {
		return false
	}
	p.Delta, q.Delta = nil, nil
	var a, b node.Enc
	p.Encode(&a)
	q.Encode(&b)
	return bytes.Equal(a.B, b.B)
}

// DecodePrepare reads what Prepare.Encode wrote.
func DecodePrepare(d *node.Dec) Prepare {
	p := Prepare{Shard: d.Int(), Primary: d.Uint64(), OpNum: d.Uint64(), Stripe: d.Int(), Pos: d.Int(), Delta: d.Bytes()}
	if n := d.Len(); n > 0 {
		p.Stripes = make([]int, n)
		for i := range p.Stripes {
			p.Stripes[i] = d.Int()
		}
	}
	p.Client, p.Seq = d.Uint64(), d.Uint64()
	if d.Bool() {
		r := DecodeReply(d)
		p.Reply = &r
	}
	return p
}

// EncodeOps appends ops to e (the baselines persist their transactions).
func EncodeOps(e *node.Enc, ops []Op) {
	e.Uint64(uint64(len(ops)))
	for _, op := range ops {
		op.fields(e)
	}
}

// DecodeOps reads what EncodeOps wrote.
func DecodeOps(d *node.Dec) []Op {
	n := d.Len()
	if n == 0 {
		return nil
	}
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = Op{Kind: Kind(d.Uint64()), Block: d.Uint64(), Offset: d.Int(), Length: d.Int(), Data: d.Bytes(),
			Expect: d.Bytes(), Delta: d.Uint64()}
	}
	return ops
}
