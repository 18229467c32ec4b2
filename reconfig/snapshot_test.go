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
			s.Timer(ctx, tick{})
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
