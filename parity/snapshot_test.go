package parity

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// A snapshot run over stripes 0 and 6 (same servers) takes one cut across
// both: its copies share the parity blocks copy-on-write, a delta
// committed after a data server's marker changes the block but not the
// copy, and a PREPARE folded into a copy (its data server's marker has not
// come) does not change the block.
func TestSnapshotRunCopyOnWrite(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(9, 9))
	s, ctx := newServer(t, 3, code) // parity 0 of stripes 0 and 6
	block := func(ps ...msg.Prepare) []byte {
		b := make([]byte, blockSize)
		for _, p := range ps {
			code.ApplyDelta(b, 0, p.Pos, p.Delta)
		}
		return b
	}
	p1, q1 := prepare(0, 1, 1, randDelta(rng)), prepare(6, 1, 2, randDelta(rng))
	for _, p := range []msg.Prepare{p1, q1} {
		s.Handle(ctx, from(p), p)
		s.Handle(ctx, from(p), commit(p))
	}
	req := msg.DataAddr(0) // data/0 rebuilds its blocks of stripes 0 and 6
	marker := func(pos int) msg.SnapshotMarker {
		return msg.SnapshotMarker{Stripe: 0, Count: 2, Nonce: 1, Requester: req, Shard: testLayout.DataMachine(0, pos)}
	}
	s.Handle(ctx, msg.DataAddr(0), marker(0))
	p3 := prepare(0, 0, 1, randDelta(rng)) // after data/0's marker: not in the cut
	p4 := prepare(0, 2, 1, randDelta(rng)) // before data/2's marker: in the cut
	s.Handle(ctx, from(p3), p3)
	s.Handle(ctx, from(p3), commit(p3))
	s.Handle(ctx, from(p4), p4)
	if !bytes.Equal(s.Block(0), block(p1, p3)) {
		t.Fatalf("parity block %x, want p1 and p3 applied (a held PREPARE folded into a copy changed it?)", s.Block(0))
	}
	ctx.Take()
	s.Handle(ctx, msg.DataAddr(1), marker(1))
	s.Handle(ctx, msg.DataAddr(2), marker(2))
	answers := nodetest.Msgs[msg.SnapshotParity](ctx.Take())
	if len(answers) != 1 || len(answers[0].Rest) != 1 {
		t.Fatalf("answers %+v, want one with two blocks", answers)
	}
	a := answers[0]
	if !bytes.Equal(a.Block, block(p1, p4)) || !bytes.Equal(a.Rest[0], block(q1)) {
		t.Fatalf("snapshot %x %x, want p1 and p4 in stripe 0, q1 in stripe 6", a.Block, a.Rest[0])
	}
	s.Handle(ctx, msg.DataAddr(2), marker(2))
	if got := nodetest.Msgs[msg.SnapshotParity](ctx.Take()); len(got) != 0 {
		t.Fatalf("a repeated marker was answered again: %+v", got)
	}
}
