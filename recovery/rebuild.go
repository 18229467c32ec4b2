// Package recovery is the recovering side of the stripe snapshot protocol
// (thesis 3.3.2.3), shared by data and parity servers: ask every data
// server of a run of stripes for a snapshot, collect their blocks (with
// their op_nums and primaries) and the parity servers' copies, and decode
// every stripe of the run once every data server answered and g blocks of
// each are known.
package recovery

import (
	"slices"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Rebuild is one snapshot run in progress: Count stripes (msg.RunStripes)
// that have the same servers in the same roles, asked for and answered
// together. Its fields are exported for the owning server's Clone and
// Hash; only this package changes them.
type Rebuild struct {
	Stripe int // the run's first stripe
	Count  int // stripes in the run
	Nonce  uint64
	Data   [][]byte // per stripe i and data position p, at i*g+p (nil: not answered or degraded)
	DGot   uint64   // data positions that answered
	Parity [][]byte // per stripe i and parity index k, at i*f+k
	OpNums []uint64 // per data position: the op_num the blocks reflect ops below
	Prims  []uint64 // per data position: the answering data server's primary_num
	Own    uint64   // the requester's own data position (a null answer), as a bit
	Heard  bool     // an answer of this round arrived since the last Retry
	Silent int      // calls of Retry in a row without an answer
	Rounds int      // rounds restarted so far
}

// New starts a rebuild of stripe st alone. self is the requester's own
// data position (or -1 for a parity server): its block is degraded, a
// null answer.
func New(l erasure.Layout, st int, nonce uint64, self int) *Rebuild {
	return NewRun(l, []int{st}, nonce, self)
}

// NewRun starts a rebuild of the stripes sts, which must be a run: st,
// st+n, st+2n, ... for n machines (RunFrom).
func NewRun(l erasure.Layout, sts []int, nonce uint64, self int) *Rebuild {
	k := len(sts)
	r := &Rebuild{Stripe: sts[0], Count: k, Nonce: nonce, Data: make([][]byte, k*l.G), Parity: make([][]byte, k*l.F),
		OpNums: make([]uint64, l.G), Prims: make([]uint64, l.G), Heard: true}
	if self >= 0 {
		r.Own = 1 << self
	}
	r.DGot = r.Own
	return r
}

// Stripes is the run's stripes, in order.
func (r *Rebuild) Stripes(l erasure.Layout) []int { return msg.RunStripes(r.Stripe, r.Count, l.N) }

// Has reports whether stripe st is in the run.
func (r *Rebuild) Has(l erasure.Layout, st int) bool {
	d := st - r.Stripe
	return d >= 0 && d%l.N == 0 && d/l.N < r.Count
}

// RunFrom picks a run starting at stripe st: st and the following stripes
// with the same servers (st+n, st+2n, ...) up to the first for which want
// does not hold, at most limit stripes in all (limit < 1: one). A run is
// contiguous (msg.RunStripes), so it stops at a stripe it does not want
// (rebuilt, or in another run) rather than cover it again.
func RunFrom(l erasure.Layout, st, limit int, want func(int) bool) []int {
	out := []int{st}
	for s := st + l.N; s < l.Stripes && len(out) < limit && want(s); s += l.N {
		out = append(out, s)
	}
	return out
}

// Decision (the thesis is silent on retries): a rebuild that heard
// nothing for a retry period starts a new round under a new nonce instead
// of asking again under the old one. A data server answers a repeated
// request with the block of its first marker but sends its marker again,
// now behind later PREPAREs; a parity server that never got the first
// marker (it was sent to an incarnation not started yet) would copy its
// block at the later point, and the decode would mix two cuts. A round
// that is still hearing answers is left to finish, and each restart waits
// twice as many silent periods as the one before (up to 64), so that a
// round slower than the retry period is not restarted forever.

// Retry is called once per retry period. When no answer arrived for
// 2^Rounds periods in a row (at most 64) it starts a new round under the
// next nonce of the owner's counter, ignoring answers to earlier rounds,
// and reports true: the caller then asks again. A round counts as heard
// until the first call after it starts: the owner's timer is shared, and
// its next firing may come at once.
func (r *Rebuild) Retry(nonce *uint64) bool {
	if r.Heard {
		r.Heard, r.Silent = false, 0
		return false
	}
	r.Silent++
	if r.Silent < 1<<min(r.Rounds, 6) {
		return false
	}
	r.Silent = 0
	r.Rounds++
	*nonce++
	r.Nonce, r.DGot, r.Heard = *nonce, r.Own, true
	r.Data, r.Parity = make([][]byte, len(r.Data)), make([][]byte, len(r.Parity))
	r.OpNums, r.Prims = make([]uint64, len(r.OpNums)), make([]uint64, len(r.Prims))
	return true
}

// Ask sends STRIPE-SNAPSHOT to every data server that has not answered,
// or to all of them when they all have but parity answers are missing
// (each data server then forwards its marker again, and the parity
// servers answer again). Retries restart the round first (Retry).
func (r *Rebuild) Ask(ctx node.Context, l erasure.Layout, num uint64) {
	all := r.DGot == 1<<l.G-1
	for pos := 0; pos < l.G; pos++ {
		if all || r.DGot&(1<<pos) == 0 {
			ctx.Send(msg.DataAddr(l.DataMachine(r.Stripe, pos)),
				msg.StripeSnapshot{Num: num, Stripe: r.Stripe, Nonce: r.Nonce, Requester: ctx.Self(), Count: msg.RunCount(r.Count)})
		}
	}
}

// OnData records a data server's answer (one block per stripe of the
// run).
func (r *Rebuild) OnData(l erasure.Layout, m msg.SnapshotData) {
	if m.Stripe != r.Stripe || m.Nonce != r.Nonce || m.Shard < 0 || m.Shard >= l.N || len(m.Rest) != r.Count-1 {
		return
	}
	role, pos := l.RoleOf(m.Stripe, m.Shard)
	if role != erasure.RoleData {
		return
	}
	r.DGot |= 1 << pos
	for i, b := range m.Blocks() {
		r.Data[i*l.G+pos] = b
	}
	r.OpNums[pos], r.Prims[pos] = m.OpNum, m.Primary
	r.Heard = true
}

// OnParity records a parity server's answer (one block per stripe).
func (r *Rebuild) OnParity(l erasure.Layout, m msg.SnapshotParity) {
	if m.Stripe == r.Stripe && m.Nonce == r.Nonce && m.Index >= 0 && m.Index < l.F && len(m.Rest) == r.Count-1 {
		for i, b := range m.Blocks() {
			r.Parity[i*l.F+m.Index] = b
		}
		r.Heard = true
	}
}

// Decode returns, per stripe of the run, its data and parity blocks once
// every data server answered and at least g blocks of every stripe are
// known; ok is false before. Blocks that were answered are shared with
// the answers (read-only); decoded ones are new.
func (r *Rebuild) Decode(l erasure.Layout) (data, parity [][][]byte, ok bool) {
	code, data, ok := r.decode(l)
	if !ok {
		return nil, nil, false
	}
	parity = make([][][]byte, r.Count)
	for i := range data {
		var err error
		if parity[i], err = code.Encode(data[i]); err != nil {
			return nil, nil, false
		}
	}
	return data, parity, true
}

// DecodeData is Decode without the parity blocks, which a data server
// rebuilding its own blocks does not need (encoding them was a third of
// its Reed-Solomon work).
func (r *Rebuild) DecodeData(l erasure.Layout) (data [][][]byte, ok bool) {
	_, data, ok = r.decode(l)
	return data, ok
}

// decode reconstructs the data blocks of every stripe of the run.
func (r *Rebuild) decode(l erasure.Layout) (*erasure.Code, [][][]byte, bool) {
	if r.DGot != 1<<l.G-1 {
		return nil, nil, false
	}
	code, err := erasure.NewCode(l.G, l.F)
	if err != nil {
		return nil, nil, false
	}
	data := make([][][]byte, r.Count)
	for i := range r.Count {
		shards := append(slices.Clone(r.Data[i*l.G:(i+1)*l.G]), r.Parity[i*l.F:(i+1)*l.F]...)
		if len(shards)-nils(shards) < l.G || code.ReconstructData(shards) != nil {
			return nil, nil, false
		}
		data[i] = shards[:l.G]
	}
	return code, data, true
}

// nils is the number of nil blocks in bs.
func nils(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		if b == nil {
			n++
		}
	}
	return n
}

// Clone returns an independent copy (blocks are never modified in place).
func (r *Rebuild) Clone() *Rebuild {
	c := *r
	c.Data, c.Parity = slices.Clone(r.Data), slices.Clone(r.Parity)
	c.OpNums, c.Prims = slices.Clone(r.OpNums), slices.Clone(r.Prims)
	return &c
}

// CloneAll returns independent copies of rs, for a server's Clone.
func CloneAll(rs []*Rebuild) []*Rebuild {
	c := make([]*Rebuild, len(rs))
	for i, r := range rs {
		c[i] = r.Clone()
	}
	return c
}

// Hash adds the rebuild's state to h.
func (r *Rebuild) Hash(h *node.Hasher) {
	h.Int(r.Stripe)
	h.Int(r.Count)
	h.Uint64(r.Nonce)
	h.Uint64(r.DGot)
	h.Uint64(r.Own)
	h.Bool(r.Heard)
	h.Int(r.Silent)
	h.Int(r.Rounds)
	for _, b := range append(slices.Clone(r.Data), r.Parity...) {
		h.OptBytes(b)
	}
	for i := range r.OpNums {
		h.Uint64(r.OpNums[i])
		h.Uint64(r.Prims[i])
	}
}

// RecordHead writes the fields that name a snapshot's record at a server
// answering it (a data server's answer, a parity server's copies): its
// requester, the run's first stripe and the round's nonce.
func RecordHead(w node.Fields, requester node.Addr, stripe int, nonce uint64) {
	w.String(string(requester))
	w.Int(stripe)
	w.Uint64(nonce)
}
