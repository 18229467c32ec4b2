package msg

import "github.com/amalgam-store/amalgam/node"

// Fixed binary records (node.Enc) of the messages servers persist.

// Encode appends r to e.
func (r Reply) Encode(e *node.Enc) {
	e.Uint64(r.Seq)
	e.Bool(r.Outcome.Aborted)
	e.Uint64(uint64(len(r.Outcome.Results)))
	for _, x := range r.Outcome.Results {
		e.Bytes(x.Data)
		e.Uint64(x.Value)
		e.Bool(x.OK)
	}
	e.String(r.Err)
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
func (p Prepare) Encode(e *node.Enc) {
	e.Int(p.Shard)
	e.Uint64(p.Primary)
	e.Uint64(p.OpNum)
	e.Int(p.Stripe)
	e.Int(p.Pos)
	e.Bytes(p.Delta)
	e.Uint64(uint64(len(p.Stripes)))
	for _, s := range p.Stripes {
		e.Int(s)
	}
	e.Uint64(p.Client)
	e.Uint64(p.Seq)
	e.Bool(p.Reply != nil)
	if p.Reply != nil {
		p.Reply.Encode(e)
	}
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
