package parity

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

const blockSize = 32

// testLayout: n=6, g=3, f=2, w=1. Machine 3 is parity 0 of stripe 0
// (data on machines 0, 1, 2) and parity 1 of stripe 1 (data on machines
// 5, 0, 1); machine 4 is parity 1 of stripe 0; machine 5 is its witness.
var testLayout = erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 12, BlockSize: blockSize}

func newCode(t testing.TB) *erasure.Code {
	t.Helper()
	c, err := erasure.NewCode(testLayout.G, testLayout.F)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newServer(t testing.TB, m int, code *erasure.Code) (*Server, *nodetest.Ctx) {
	t.Helper()
	s := New(msg.InitialConfig(testLayout), m, code)
	ctx := nodetest.New(msg.ParityAddr(m))
	s.Init(ctx)
	return s, ctx
}

func randDelta(rng *rand.Rand) []byte {
	d := make([]byte, blockSize)
	for i := range d {
		d[i] = byte(rng.Uint32())
	}
	return d
}

// prepare builds a valid PREPARE from the data server of stripe st at position pos.
func prepare(st, pos int, opNum uint64, delta []byte) msg.Prepare {
	shard := testLayout.DataMachine(st, pos)
	return msg.Prepare{Shard: shard, Primary: 1, OpNum: opNum, Stripe: st, Pos: pos, Delta: delta,
		Stripes: []int{st}, Client: 1, Seq: opNum}
}

func commit(p msg.Prepare) msg.Commit {
	return msg.Commit{Shard: p.Shard, Primary: p.Primary, OpNum: p.OpNum, Stripe: p.Stripe}
}

func drop(p msg.Prepare) msg.PrepareDrop {
	return msg.PrepareDrop{Shard: p.Shard, Primary: p.Primary, OpNum: p.OpNum, Stripe: p.Stripe}
}

func from(p msg.Prepare) node.Addr { return msg.DataAddr(p.Shard) }

func TestPrepareValidation(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(1, 1))
	good := prepare(0, 1, 1, randDelta(rng))
	bad := []struct {
		name string
		p    func() msg.Prepare
	}{
		{"old primary", func() msg.Prepare { p := good; p.Primary = 0; return p }},
		{"stripe where this machine is a witness", func() msg.Prepare { return prepare(2, 1, 1, good.Delta) }},
		{"stripe where this machine is data", func() msg.Prepare { return prepare(3, 0, 1, good.Delta) }},
		{"another stripe where this machine is data", func() msg.Prepare { return prepare(4, 2, 1, good.Delta) }},
		{"wrong position", func() msg.Prepare { p := good; p.Pos = 2; return p }},
		{"shard not data of the stripe", func() msg.Prepare { p := good; p.Shard = 4; return p }},
		{"shard out of range", func() msg.Prepare { p := good; p.Shard = 6; return p }},
		{"negative shard", func() msg.Prepare { p := good; p.Shard = -1; return p }},
		{"stripe out of range", func() msg.Prepare { p := good; p.Stripe = testLayout.Stripes; return p }},
		{"negative stripe", func() msg.Prepare { p := good; p.Stripe = -1; return p }},
		{"short delta", func() msg.Prepare { p := good; p.Delta = p.Delta[:blockSize-1]; return p }},
	}
	t.Run("future primary", func(t *testing.T) {
		// A primary of a configuration this server has not seen: not
		// accepted, held until the configuration arrives, which the
		// server asks the reconfiguration service for.
		s, ctx := newServer(t, 3, code)
		p := good
		p.Primary = 2
		s.Handle(ctx, msg.DataAddr(p.Shard), p)
		effs := ctx.Take()
		if len(effs) != 1 || effs[0].To != msg.ReconfigAddr || effs[0].Msg != (msg.ConfigOK{Num: 0}) {
			t.Fatalf("future prepare %+v: effects %v, want only ConfigOK{0} to reconfig", p, effs)
		}
		if len(s.Prepares()) != 0 {
			t.Fatal("future prepare was accepted")
		}
	})
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			s, ctx := newServer(t, 3, code)
			h := s.Hash()
			p := tc.p()
			s.Handle(ctx, msg.DataAddr(max(p.Shard, 0)), p)
			if effs := ctx.Take(); len(effs) != 0 {
				t.Fatalf("invalid prepare %+v acked: %v", p, effs)
			}
			if s.Hash() != h || len(s.Prepares()) != 0 {
				t.Fatal("invalid prepare was held")
			}
		})
	}

	t.Run("valid", func(t *testing.T) {
		s, ctx := newServer(t, 3, code)
		h := s.Hash()
		s.Handle(ctx, from(good), good)
		effs := ctx.Take()
		want := msg.PrepareOK{Shard: good.Shard, Primary: 1, OpNum: 1, Stripe: 0, Inc: 1}
		if len(effs) != 1 || effs[0].Kind != "stream" || effs[0].To != from(good) || effs[0].Msg != want {
			t.Fatalf("effects %v, want PrepareOK %+v streamed to %s", effs, want, from(good))
		}
		held := s.Prepares()
		if len(held) != 1 || held[0].Applied || held[0].P.Key() != good.Key() || !s.HoldsOn(0) || s.HoldsOn(1) {
			t.Fatalf("held %+v", held)
		}
		if s.Hash() == h {
			t.Fatal("holding a prepare did not change the hash")
		}
		if !bytes.Equal(s.Block(0), make([]byte, blockSize)) {
			t.Fatal("a prepare changed the parity block before it committed")
		}
		// A duplicate is acked again and held once.
		s.Handle(ctx, from(good), good)
		if effs := ctx.Take(); len(effs) != 1 || len(s.Prepares()) != 1 {
			t.Fatalf("duplicate: effects %v, held %d", effs, len(s.Prepares()))
		}
	})

	t.Run("read with no delta", func(t *testing.T) {
		s, ctx := newServer(t, 3, code)
		p := prepare(1, 0, 1, nil) // stripe 1: machine 3 is parity 1
		s.Handle(ctx, from(p), p)
		if effs := ctx.Take(); len(effs) != 1 {
			t.Fatalf("effects %v", effs)
		}
		s.Handle(ctx, from(p), commit(p))
		s.Handle(ctx, from(p), drop(p))
		if !bytes.Equal(s.Block(1), make([]byte, blockSize)) || len(s.Prepares()) != 0 || s.OpNum(p.Shard) != 1 {
			t.Fatalf("block %x, held %d, op num %d", s.Block(1), len(s.Prepares()), s.OpNum(p.Shard))
		}
	})
}

func TestCommitAppliesOnce(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(2, 2))
	// Machine 3 is parity 0 of stripe 0 and parity 1 of stripe 1.
	for _, c := range []struct{ stripe, pos, idx int }{{0, 1, 0}, {1, 2, 1}} {
		p := prepare(c.stripe, c.pos, 5, randDelta(rng))
		want := make([]byte, blockSize)
		code.ApplyDelta(want, c.idx, c.pos, p.Delta)
		check := func(t *testing.T, s *Server, what string) {
			t.Helper()
			if !bytes.Equal(s.Block(c.stripe), want) {
				t.Fatalf("%s: parity %x, want coefficient x delta = %x", what, s.Block(c.stripe), want)
			}
		}
		t.Run(fmt.Sprintf("stripe%d", c.stripe), func(t *testing.T) {
			t.Run("commit, duplicate commit, drop", func(t *testing.T) {
				s, ctx := newServer(t, 3, code)
				s.Handle(ctx, from(p), p)
				s.Handle(ctx, from(p), commit(p))
				check(t, s, "after commit")
				if h := s.Prepares(); len(h) != 1 || !h[0].Applied {
					t.Fatalf("held after commit: %+v", h)
				}
				if s.OpNum(p.Shard) != 5 {
					t.Fatalf("op num %d, want 5", s.OpNum(p.Shard))
				}
				s.Handle(ctx, from(p), commit(p))
				check(t, s, "after duplicate commit")
				s.Handle(ctx, from(p), drop(p))
				check(t, s, "after commit then drop")
				if len(s.Prepares()) != 0 {
					t.Fatal("drop did not discard the prepare")
				}
				s.Handle(ctx, from(p), commit(p))
				s.Handle(ctx, from(p), drop(p))
				check(t, s, "after late duplicates")
				if effs := ctx.Take(); len(effs) != 1 {
					t.Fatalf("effects %v, want only the PrepareOK", effs)
				}
			})
			t.Run("drop without commit", func(t *testing.T) {
				s, ctx := newServer(t, 3, code)
				s.Handle(ctx, from(p), p)
				s.Handle(ctx, from(p), drop(p))
				check(t, s, "after drop")
				if len(s.Prepares()) != 0 || s.OpNum(p.Shard) != 5 {
					t.Fatal("drop without commit did not apply and discard")
				}
				s.Handle(ctx, from(p), commit(p))
				check(t, s, "after a commit following the drop")
			})
			t.Run("commit from a stale primary", func(t *testing.T) {
				s, ctx := newServer(t, 3, code)
				s.Handle(ctx, from(p), p)
				stale := commit(p)
				stale.Primary = 0
				s.Handle(ctx, from(p), stale)
				staleDrop := drop(p)
				staleDrop.Primary = 0
				s.Handle(ctx, from(p), staleDrop)
				if !bytes.Equal(s.Block(c.stripe), make([]byte, blockSize)) || len(s.Prepares()) != 1 {
					t.Fatal("a commit or drop from a stale primary was applied")
				}
			})
			t.Run("commit without prepare", func(t *testing.T) {
				s, ctx := newServer(t, 3, code)
				s.Handle(ctx, from(p), commit(p))
				s.Handle(ctx, from(p), drop(p))
				if !bytes.Equal(s.Block(c.stripe), make([]byte, blockSize)) || s.OpNum(p.Shard) != 0 {
					t.Fatal("a commit without a prepare changed the state")
				}
			})
		})
	}
}

// TestMalformedCommitIgnored: a COMMIT or PREPARE-DROP naming a shard
// outside the configuration is ignored, not a crash.
func TestMalformedCommitIgnored(t *testing.T) {
	s, ctx := newServer(t, 3, newCode(t))
	h := s.Hash()
	for _, shard := range []int{-1, testLayout.N, 1000} {
		s.Handle(ctx, msg.DataAddr(0), msg.Commit{Shard: shard, Primary: 1, OpNum: 1, Stripe: 0})
		s.Handle(ctx, msg.DataAddr(0), msg.PrepareDrop{Shard: shard, Primary: 1, OpNum: 1, Stripe: 0})
	}
	if len(ctx.Take()) != 0 || s.Hash() != h {
		t.Fatal("malformed messages had an effect")
	}
}

// TestParityMatchesEncoding runs random writes from the three data servers
// of stripes 0 and 1 through both parity servers of each stripe, committing
// in various ways, and checks the parity blocks against a full encode.
func TestParityMatchesEncoding(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(3, 3))
	stripes := []int{0, 1, 6}
	servers := map[int]*Server{}
	ctxs := map[int]*nodetest.Ctx{}
	for _, st := range stripes {
		for k := 0; k < testLayout.F; k++ {
			m := testLayout.ParityMachine(st, k)
			if servers[m] == nil {
				servers[m], ctxs[m] = newServer(t, m, code)
			}
		}
	}
	data := map[int][][]byte{}
	for _, st := range stripes {
		data[st] = make([][]byte, testLayout.G)
		for i := range data[st] {
			data[st][i] = make([]byte, blockSize)
		}
	}
	opNum := map[int]uint64{} // per shard
	var pending []msg.Prepare
	flush := func(p msg.Prepare, how int) {
		for k := 0; k < testLayout.F; k++ {
			m := testLayout.ParityMachine(p.Stripe, k)
			s, ctx := servers[m], ctxs[m]
			switch how {
			case 0:
				s.Handle(ctx, from(p), commit(p))
				s.Handle(ctx, from(p), drop(p))
			case 1:
				s.Handle(ctx, from(p), drop(p))
			case 2:
				s.Handle(ctx, from(p), commit(p))
				s.Handle(ctx, from(p), commit(p))
				s.Handle(ctx, from(p), drop(p))
			}
		}
	}
	for step := 0; step < 200; step++ {
		st := stripes[rng.IntN(len(stripes))]
		pos := rng.IntN(testLayout.G)
		old := data[st][pos]
		nw := bytes.Clone(old)
		for j := rng.IntN(blockSize); j < blockSize; j += 1 + rng.IntN(5) {
			nw[j] = byte(rng.Uint32())
		}
		data[st][pos] = nw
		shard := testLayout.DataMachine(st, pos)
		opNum[shard]++
		p := prepare(st, pos, opNum[shard], erasure.Delta(old, nw))
		for k := 0; k < testLayout.F; k++ {
			m := testLayout.ParityMachine(st, k)
			servers[m].Handle(ctxs[m], from(p), p)
			if effs := ctxs[m].Take(); len(effs) != 1 {
				t.Fatalf("step %d: parity/%d effects %v", step, m, effs)
			}
		}
		pending = append(pending, p)
		// Commit a random prefix of what is pending, in order.
		n := rng.IntN(len(pending) + 1)
		for _, q := range pending[:n] {
			flush(q, rng.IntN(3))
		}
		pending = pending[n:]
	}
	for _, q := range pending {
		flush(q, 0)
	}
	for _, st := range stripes {
		want, err := code.Encode(data[st])
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < testLayout.F; k++ {
			m := testLayout.ParityMachine(st, k)
			if got := servers[m].Block(st); !bytes.Equal(got, want[k]) {
				t.Errorf("stripe %d parity %d (machine %d) = %x, want encode(data) = %x", st, k, m, got, want[k])
			}
		}
	}
	for m, s := range servers {
		if len(s.Prepares()) != 0 {
			t.Errorf("parity/%d still holds %d prepares", m, len(s.Prepares()))
		}
		for shard := 0; shard < testLayout.N; shard++ {
			// A parity server sees only the ops for its stripes, so its
			// op num is at most the shard's.
			if s.OpNum(shard) > opNum[shard] {
				t.Errorf("parity/%d op num for shard %d is %d > %d", m, shard, s.OpNum(shard), opNum[shard])
			}
		}
	}
}

func TestParityCloneAndHash(t *testing.T) {
	code := newCode(t)
	rng := rand.New(rand.NewPCG(4, 4))
	s, ctx := newServer(t, 3, code)
	p := prepare(0, 0, 1, randDelta(rng))
	s.Handle(ctx, from(p), p)
	s.Handle(ctx, from(p), commit(p))
	h := s.Hash()
	block := bytes.Clone(s.Block(0))

	c := s.Clone().(*Server)
	if c.Hash() != h {
		t.Fatal("clone hashes differently")
	}
	q := prepare(0, 0, 2, randDelta(rng))
	c.Handle(ctx, from(p), drop(p))
	c.Handle(ctx, from(q), q)
	c.Handle(ctx, from(q), commit(q))
	if c.Hash() == h {
		t.Fatal("clone hash did not change")
	}
	if s.Hash() != h || !bytes.Equal(s.Block(0), block) || len(s.Prepares()) != 1 || s.OpNum(0) != 1 {
		t.Fatal("events on the clone changed the original")
	}
	ch := c.Hash()
	cblock := bytes.Clone(c.Block(0))
	s.Handle(ctx, from(q), q)
	s.Handle(ctx, from(q), commit(q))
	if c.Hash() != ch || !bytes.Equal(c.Block(0), cblock) {
		t.Fatal("events on the original changed the clone")
	}
	// Same contents, different history (p still held on s): different hash;
	// once dropped, equal.
	if s.Hash() == c.Hash() {
		t.Fatal("held prepares not part of the hash")
	}
	s.Handle(ctx, from(p), drop(p))
	if s.Hash() != c.Hash() {
		t.Fatal("equal states hash differently")
	}
}
