package reconfig

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// newCtx records what the service or the failure detector does.
func newCtx() *nodetest.Ctx { return nodetest.New(msg.ReconfigAddr) }

// take returns and forgets the messages sent; reconfig sends unordered
// messages only.
func take(ctx *nodetest.Ctx) nodetest.Effects {
	effs := ctx.Take()
	if len(effs.Kind(nodetest.Stream)) != 0 {
		panic("reconfig does not stream")
	}
	return effs.Kind(nodetest.Send)
}

var layout = erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 6, BlockSize: 8}

func TestReplaceDataServer(t *testing.T) {
	s := New(msg.InitialConfig(layout))
	ctx := newCtx()
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
	var targets []node.Addr
	for _, e := range take(ctx) {
		stop, ok := e.Msg.(msg.StopShard)
		if !ok || stop.Num != 1 || stop.Shard != 0 || stop.Primary != 1 {
			t.Fatalf("unexpected %+v to %s", e.Msg, e.To)
		}
		targets = append(targets, e.To)
	}
	// Every backup of every stripe where machine 0 holds data is asked.
	for _, st := range layout.StripesAs(0, erasure.RoleData) {
		for i, m := range layout.Backups(st) {
			if !slices.Contains(targets, backupAddr(layout, i, m)) {
				t.Fatalf("backup %d of stripe %d not asked", i, st)
			}
		}
	}
	// Answers from one backup per stripe are not a quorum (w+1 = 2 needed).
	answered := map[node.Addr]bool{}
	answer := func(a node.Addr) {
		answered[a] = true
		s.Handle(ctx, a, msg.StopShardOK{Num: 1, Shard: 0})
	}
	for _, st := range layout.StripesAs(0, erasure.RoleData) {
		answer(msg.ParityAddr(layout.ParityMachine(st, 0)))
	}
	if out := take(ctx); len(out) != 0 || s.Config().Num != 0 {
		t.Fatalf("replaced with one answer per stripe: %+v", out)
	}
	for _, st := range layout.StripesAs(0, erasure.RoleData) {
		answer(msg.WitnessAddr(layout.WitnessMachine(st, 0)))
	}
	cfg := s.Config()
	if cfg.Num != 1 || cfg.Data[0] != 2 || cfg.Changed != msg.DataAddr(0) {
		t.Fatalf("configuration after replacement: %+v", cfg)
	}
	out := take(ctx)
	if len(out) != 3*layout.N {
		t.Fatalf("NewConfig went to %d servers, want %d", len(out), 3*layout.N)
	}
	for _, e := range out {
		nc, ok := e.Msg.(msg.NewConfig)
		if !ok || nc.Config.Num != 1 || nc.Install == nil || nc.Install.Shard != 0 {
			t.Fatalf("unexpected %+v to %s", e.Msg, e.To)
		}
	}
	if inc, ok := (msg.NewConfig{Config: cfg}).StartsIncarnation(msg.DataAddr(0)); !ok || inc != 2 {
		t.Fatalf("NewConfig starts data/0 incarnation %d, %v; want 2, true", inc, ok)
	}
	if _, ok := (msg.NewConfig{Config: cfg}).StartsIncarnation(msg.DataAddr(1)); ok {
		t.Fatal("NewConfig starts an incarnation of data/1, which it did not replace")
	}
	// A server that acknowledges gets nothing more; one that is behind is
	// sent the next configuration it lacks.
	s.Handle(ctx, msg.DataAddr(1), msg.ConfigOK{Num: 1})
	s.Handle(ctx, msg.DataAddr(2), msg.ConfigOK{Num: 0})
	out = take(ctx)
	if len(out) != 1 || out[0].To != msg.DataAddr(2) {
		t.Fatalf("after acks: %+v", out)
	}
}

func TestDataReplacementPreemptsParity(t *testing.T) {
	s := New(msg.InitialConfig(layout))
	ctx := newCtx()
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleParity, Machine: 3, Inc: 1})
	for _, e := range take(ctx) {
		if _, ok := e.Msg.(msg.StopBackup); !ok {
			t.Fatalf("parity replacement sent %+v", e.Msg)
		}
	}
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 1, Inc: 1})
	for _, e := range take(ctx) {
		if _, ok := e.Msg.(msg.StopShard); !ok {
			t.Fatalf("data replacement sent %+v", e.Msg)
		}
	}
	// The parity replacement's late answers no longer count.
	s.Handle(ctx, msg.DataAddr(0), msg.StopBackupOK{Num: 1, Role: erasure.RoleParity, Machine: 3})
	if s.Config().Num != 0 || len(s.queue) != 1 || s.queue[0].Role != erasure.RoleParity {
		t.Fatalf("parity replacement not queued behind the data replacement: %+v", s.queue)
	}
}

func TestCloneAndHash(t *testing.T) {
	s := New(msg.InitialConfig(layout))
	ctx := newCtx()
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
	c := s.Clone()
	h := s.Hash()
	if c.Hash() != h {
		t.Fatal("clone hashes differently")
	}
	s.Handle(ctx, msg.ParityAddr(3), msg.StopShardOK{Num: 1, Shard: 0})
	if s.Hash() == h || c.Hash() != h {
		t.Fatal("hash did not follow the change, or the clone changed with the original")
	}
}

// A backup replaced after operations committed with its predecessor's
// acknowledgement does not count in a data server replacement's quorum
// until the shard reports that it caught up (the model checker found
// committed writes lost otherwise: replace-witness).
func TestFreshBackupDoesNotCountInQuorum(t *testing.T) {
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 1, BlockSize: 8}
	run := func(caughtUp bool) *Service {
		s := New(msg.InitialConfig(l))
		ctx := newCtx()
		s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleWitness, Machine: 5, Inc: 1})
		for m := 0; m < 3; m++ {
			s.Handle(ctx, msg.DataAddr(m), msg.StopBackupOK{Num: 1, Role: erasure.RoleWitness, Machine: 5})
		}
		if s.Config().Num != 1 {
			t.Fatal("witness not replaced")
		}
		if caughtUp {
			s.Handle(ctx, msg.DataAddr(0), msg.Resending{Num: 1, Shard: 0})
		}
		s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
		s.Handle(ctx, msg.ParityAddr(3), msg.StopShardOK{Num: 2, Shard: 0})
		s.Handle(ctx, msg.WitnessAddr(5), msg.StopShardOK{Num: 2, Shard: 0})
		return s
	}
	if s := run(false); s.Config().Num != 1 {
		t.Fatal("data server replaced with a quorum that counts a witness not caught up")
	}
	if s := run(true); s.Config().Num != 2 {
		t.Fatal("data server not replaced although the new witness caught up")
	}
	s := run(false)
	s.Handle(newCtx(), msg.ParityAddr(4), msg.StopShardOK{Num: 2, Shard: 0})
	if s.Config().Num != 2 {
		t.Fatal("data server not replaced with both parity servers answering")
	}
}

// SLC (thesis 3.4.2): with two data servers of a stripe replaced and not
// yet rebuilt (f=2), replacing a parity server of the stripe would leave
// g-1 blocks: the service postpones it until one of them reports Rebuilt.
// Every Rebuilt is acknowledged; a stale one releases nothing.
func TestReplacementPostponedUntilRebuilt(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 1, BlockSize: 8}
	s := New(msg.InitialConfig(l))
	ctx := newCtx()
	replaceData := func(m int) {
		t.Helper()
		s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: m, Inc: 1})
		s.Handle(ctx, msg.ParityAddr(3), msg.StopShardOK{Num: s.Config().Num + 1, Shard: m})
		if s.Config().Data[m] != 2 {
			t.Fatalf("data/%d not replaced", m)
		}
		take(ctx)
	}
	replaceData(0)
	replaceData(1)
	if got := s.Degraded(); !slices.Equal(got, []node.Addr{msg.DataAddr(0), msg.DataAddr(1)}) {
		t.Fatalf("degraded %v, want data/0 and data/1", got)
	}
	parity3 := msg.Replace{Role: erasure.RoleParity, Machine: 3, Inc: 1}
	s.Handle(ctx, "admin", parity3)
	if out := take(ctx); len(out) != 0 || !s.Busy() || !slices.Equal(s.Postponed(), []msg.Replace{parity3}) {
		t.Fatalf("parity/3 replacement not postponed: sent %+v, postponed %v", out, s.Postponed())
	}
	// A report from an older incarnation, or from a server that is not
	// degraded, releases nothing, and is acknowledged.
	for _, m := range []msg.Rebuilt{{Role: erasure.RoleData, Machine: 0, Inc: 1}, {Role: erasure.RoleData, Machine: 2, Inc: 1}} {
		s.Handle(ctx, msg.DataAddr(m.Machine), m)
		out := take(ctx)
		if len(out) != 1 || out[0].To != msg.DataAddr(m.Machine) || out[0].Msg != msg.RebuiltOK(m) {
			t.Fatalf("after %+v: %+v, want only its acknowledgement", m, out)
		}
	}
	if len(s.Postponed()) != 1 {
		t.Fatal("released by a stale report")
	}
	// The snapshot keeps the degraded servers; the request stays postponed.
	r, err := Restore(s.Snapshot())
	if err != nil || r.Hash() != s.Hash() || !slices.Equal(r.Postponed(), s.Postponed()) {
		t.Fatalf("restored snapshot differs: %v", err)
	}
	s.Handle(ctx, msg.DataAddr(1), msg.Rebuilt{Role: erasure.RoleData, Machine: 1, Inc: 2})
	stops := 0
	for _, e := range take(ctx) {
		switch m := e.Msg.(type) {
		case msg.StopBackup:
			if m.Role != erasure.RoleParity || m.Machine != 3 || m.Num != 3 {
				t.Fatalf("unexpected %+v", m)
			}
			stops++
		case msg.RebuiltOK:
		default:
			t.Fatalf("unexpected %+v to %s", e.Msg, e.To)
		}
	}
	if stops != 3 || len(s.Postponed()) != 0 || !slices.Equal(s.Degraded(), []node.Addr{msg.DataAddr(0)}) {
		t.Fatalf("after data/1 rebuilt: %d StopBackups, postponed %v, degraded %v", stops, s.Postponed(), s.Degraded())
	}
	for m := 0; m < 3; m++ {
		s.Handle(ctx, msg.DataAddr(m), msg.StopBackupOK{Num: 3, Role: erasure.RoleParity, Machine: 3})
	}
	if cfg := s.Config(); cfg.Num != 3 || cfg.Parity[3] != 2 ||
		!slices.Equal(s.Degraded(), []node.Addr{msg.DataAddr(0), msg.ParityAddr(3)}) {
		t.Fatalf("parity/3 not replaced, or not degraded: %+v, degraded %v", cfg, s.Degraded())
	}
}

// A server replaced again while degraded stays one degraded block: with
// data/0 and data/1 degraded (f=2), data/0's replacement may be replaced
// (it rebuilt nothing yet: the stripe still has f degraded blocks).
// Witnesses hold no blocks and are never postponed.
func TestSLCCountsBlocks(t *testing.T) {
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 1, BlockSize: 8}
	s := New(msg.InitialConfig(l))
	ctx := newCtx()
	replaceData := func(m int, inc uint64) {
		t.Helper()
		s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: m, Inc: inc})
		num := s.Config().Num + 1
		s.Handle(ctx, msg.ParityAddr(3), msg.StopShardOK{Num: num, Shard: m})
		s.Handle(ctx, msg.WitnessAddr(5), msg.StopShardOK{Num: num, Shard: m})
		if s.Config().Num != num {
			t.Fatalf("data/%d incarnation %d not replaced", m, inc)
		}
	}
	replaceData(0, 1)
	replaceData(1, 1)
	replaceData(0, 2)
	if len(s.Degraded()) != 2 {
		t.Fatalf("degraded %v", s.Degraded())
	}
	take(ctx)
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleWitness, Machine: 5, Inc: 1})
	if len(s.Postponed()) != 0 || len(take(ctx)) == 0 {
		t.Fatal("witness replacement postponed")
	}
}

// Data server replacements go first: a parity replacement queued ahead of
// one starts after it.
func TestDataReplacementsFirst(t *testing.T) {
	s := New(msg.InitialConfig(layout))
	ctx := newCtx()
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleParity, Machine: 1, Inc: 1})
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 2, Inc: 1})
	take(ctx)
	for _, st := range layout.StripesAs(0, erasure.RoleData) {
		for i, m := range layout.Backups(st) {
			s.Handle(ctx, backupAddr(layout, i, m), msg.StopShardOK{Num: 1, Shard: 0})
		}
	}
	if s.Config().Num != 1 {
		t.Fatal("data/0 not replaced")
	}
	if s.op == nil || s.op.req.Role != erasure.RoleData || s.op.req.Machine != 2 {
		t.Fatalf("next replacement %+v, want data/2", s.op)
	}
}

// TestSnapshotRestore drives the service through random replacements and
// answers, and checks at every step that a restored snapshot hashes equal
// and behaves the same on the next input.
func TestSnapshotRestore(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	s := New(msg.InitialConfig(layout))
	ctx := newCtx()
	s.Init(ctx)
	var last nodetest.Effects
	steps, replaced, postponed, released := 0, 0, 0, 0
	for steps < 3000 {
		steps++
		var from node.Addr
		var m node.Message
		cfg := s.Config()
		switch k := rng.IntN(10); {
		case k == 0:
			r := erasure.Role(1 + rng.IntN(3))
			mach := rng.IntN(layout.N)
			inc := map[erasure.Role][]uint64{erasure.RoleData: cfg.Data, erasure.RoleParity: cfg.Parity, erasure.RoleWitness: cfg.Witness}[r][mach]
			from, m = "operator", msg.Replace{Role: r, Machine: mach, Inc: inc}
		case k == 1 && rng.IntN(4) == 0 && len(s.Degraded()) > 0:
			// A replacement rebuilt everything (SLC releases postponed
			// replacements), now or in an older incarnation.
			d := s.Degraded()[rng.IntN(len(s.Degraded()))]
			role, mach, _ := msg.ParseAddr(d)
			r := msg.Rebuilt{Role: erasure.RoleData, Machine: mach, Inc: cfg.Data[mach]}
			if role == "parity" {
				r = msg.Rebuilt{Role: erasure.RoleParity, Machine: mach, Inc: cfg.Parity[mach]}
			}
			r.Inc -= uint64(rng.IntN(2))
			from, m = d, r
		case k == 2 && rng.IntN(2) == 0:
			// A data server reports that the replaced backups caught up
			// (unprompted: it reports when its re-sending ends).
			mach := rng.IntN(layout.N)
			from, m = msg.DataAddr(mach), msg.Resending{Num: cfg.Num, Shard: mach}
		case len(last) > 0 && k != 3:
			e := last[rng.IntN(len(last))]
			from = e.To
			switch q := e.Msg.(type) {
			case msg.StopShard:
				ok := msg.StopShardOK{Num: q.Num, Shard: q.Shard, OpNum: uint64(rng.IntN(3))}
				if rng.IntN(2) == 0 {
					rep := msg.Reply{Seq: 1 + uint64(rng.IntN(5))}
					ok.Prepares = []msg.Prepare{{Shard: q.Shard, Primary: q.Primary, OpNum: ok.OpNum + 1, Stripe: 0,
						Stripes: []int{0}, Client: 4, Seq: rep.Seq, Reply: &rep, Delta: []byte{1}}}
					ok.Clients = []msg.ClientRecord{{Client: 4, Seq: rep.Seq, Reply: rep}}
				}
				m = ok
			case msg.StopBackup:
				m = msg.StopBackupOK{Num: q.Num, Role: q.Role, Machine: q.Machine}
			case msg.NewConfig:
				m = msg.ConfigOK{Num: q.Config.Num}
				if role, mach, err := msg.ParseAddr(e.To); err == nil && role == "data" && rng.IntN(3) == 0 {
					// The data server reports the replaced backups it
					// still re-sends to (none, or one at random).
					r := msg.Resending{Num: q.Config.Num, Shard: mach}
					if rng.IntN(2) == 0 {
						r.Backups = []node.Addr{msg.ParityAddr(rng.IntN(layout.N))}
					}
					m = r
				}
			default:
				continue
			}
		default: // now and then, or when there is nothing to answer: the retry timer
			s.Timer(ctx, tick)
			last = take(ctx)
			continue
		}
		b := s.Snapshot()
		r, err := Restore(b)
		if err != nil {
			t.Fatal(err)
		}
		if r.Hash() != s.Hash() {
			t.Fatalf("step %d: restored snapshot hashes differently", steps)
		}
		rctx := newCtx()
		before := len(s.Postponed())
		s.Handle(ctx, from, m)
		r.Handle(rctx, from, m)
		osent, rsent := ctx.Effects().Kind(nodetest.Send), rctx.Effects().Kind(nodetest.Send)
		if r.Hash() != s.Hash() || len(rsent) != len(osent) {
			t.Fatalf("step %d: restored service diverged on %T", steps, m)
		}
		for i := range osent {
			if node.HashOf(osent[i].Msg) != node.HashOf(rsent[i].Msg) || osent[i].To != rsent[i].To {
				t.Fatalf("step %d: restored service sent %+v, original %+v", steps, rsent[i], osent[i])
			}
		}
		out := slices.DeleteFunc(take(ctx), func(e nodetest.Effect) bool { _, ack := e.Msg.(msg.RebuiltOK); return ack })
		if len(out) > 0 {
			last = out
		}
		replaced = int(s.Config().Num)
		if len(s.Postponed()) > 0 {
			postponed++
		}
		if _, ok := m.(msg.Rebuilt); ok && len(s.Postponed()) < before {
			released++
		}
	}
	if postponed == 0 || released == 0 {
		t.Fatalf("%d steps with a postponed replacement, %d releases (%d configurations): the test exercised too little of SLC", postponed, released, replaced)
	}
	if replaced < 5 {
		t.Fatalf("only %d replacements in %d steps: the test exercised too little", replaced, steps)
	}
	t.Logf("%d steps, %d configurations, %d steps with a postponed replacement, %d Rebuilt", steps, replaced, postponed, released)
}
