package check

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/workload"
	"github.com/anishathalye/porcupine"
)

// simRun is one seeded randomized run of Amalgam with its oracles:
// (a) parity consistency on quiescent stripes, (b) linearizability with
// porcupine, (c) at-most-once execution.
type simRun struct {
	layout          erasure.Layout
	clients, ops    int
	loss, dup       float64
	seed            uint64
	checkEverySteps int
}

func (r simRun) run(t *testing.T) (*mc.State, *erasure.Code) {
	t.Helper()
	code, err := erasure.NewCode(r.layout.G, r.layout.F)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(r.seed, 7))
	scripts := make([][][]msg.Op, r.clients)
	for i := range scripts {
		scripts[i] = workload.Generate(rng.Uint64, r.layout, 0, r.ops, workload.DefaultMix)
	}
	s := mc.NewState(Amalgam(msg.InitialConfig(r.layout), code, scripts))
	rec := NewRecorder(s)
	opt := mc.SimOptions{Seed: r.seed, MaxSteps: 200000, Loss: r.loss, Dup: r.dup, TimerChance: 0.02}
	final, steps, err := mc.Simulate(s, opt, nil, func(st mc.Step) error {
		if err := rec.Step(st); err != nil {
			return err
		}
		if r.checkEverySteps > 0 && st.N%r.checkEverySteps == 0 {
			return ParityConsistent(st.After, r.layout, code)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed %d: %v", r.seed, err)
	}
	if !mc.ClientsDone(final) {
		t.Fatalf("seed %d: clients not done after %d steps", r.seed, steps)
	}
	if !final.Quiet() {
		t.Fatalf("seed %d: messages still in flight at the end", r.seed)
	}
	for st := 0; st < r.layout.Stripes; st++ {
		if !Quiescent(final, r.layout, st) {
			t.Fatalf("seed %d: stripe %d not quiescent at the end", r.seed, st)
		}
	}
	if err := ParityConsistent(final, r.layout, code); err != nil {
		t.Fatalf("seed %d: %v", r.seed, err)
	}
	hist := rec.History()
	if len(hist) != r.clients*r.ops {
		t.Fatalf("seed %d: recorded %d operations, want %d", r.seed, len(hist), r.clients*r.ops)
	}
	// No timeout: the history is clients*ops operations, and one that ran
	// out would report Unknown, a failure that depends on the machine's load.
	res, info := porcupine.CheckOperationsVerbose(workload.Model(r.layout), hist, 0)
	if res != porcupine.Ok {
		for _, op := range hist {
			t.Logf("client %d [%d,%d] %s -> %s", op.ClientId, op.Call, op.Return,
				workload.DescribeTxn(op.Input.([]msg.Op)), workload.DescribeReply(op.Output.(msg.Reply)))
		}
		_ = info
		t.Fatalf("seed %d: history of %d operations is %s, not linearizable", r.seed, len(hist), res)
	}
	return final, code
}

func TestRandomizedAmalgam(t *testing.T) {
	layouts := []erasure.Layout{
		{N: 5, G: 3, F: 2, W: 0, Stripes: 5, BlockSize: 16},
		{N: 6, G: 3, F: 2, W: 1, Stripes: 6, BlockSize: 16},
	}
	for _, l := range layouts {
		t.Run(fmt.Sprintf("n%d_g%d_f%d_w%d", l.N, l.G, l.F, l.W), func(t *testing.T) {
			t.Parallel()
			seeds := sweep(1000, 50, 20)
			for seed := 1; seed <= seeds; seed++ {
				simRun{layout: l, clients: 4, ops: 50, loss: 0.1, dup: 0.1, seed: uint64(seed), checkEverySteps: 7}.run(t)
			}
			t.Logf("%d seeds, 4 clients x 50 operations each, no violation", seeds)
		})
	}
}

// TestDecodeAfterWorkload loses every choice of up to f blocks of every
// stripe after a random workload and decodes the rest.
func TestDecodeAfterWorkload(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 64}
	for seed := uint64(1); seed <= 5; seed++ {
		final, code := simRun{layout: l, clients: 4, ops: 50, loss: 0.05, dup: 0.05, seed: seed}.run(t)
		for st := 0; st < l.Stripes; st++ {
			dataBlocks, parityBlocks := StripeBlocks(final, l, st)
			all := append(append([][]byte{}, dataBlocks...), parityBlocks...)
			nonzero := false
			for _, b := range dataBlocks {
				for _, x := range b {
					nonzero = nonzero || x != 0
				}
			}
			if !nonzero {
				t.Fatalf("seed %d stripe %d: workload wrote nothing; the test would prove nothing", seed, st)
			}
			for mask := 1; mask < 1<<len(all); mask++ {
				lost := 0
				shards := make([][]byte, len(all))
				for i := range all {
					if mask&(1<<i) != 0 {
						lost++
					} else {
						shards[i] = append([]byte(nil), all[i]...)
					}
				}
				if lost > l.F {
					continue
				}
				if err := code.ReconstructData(shards); err != nil {
					t.Fatalf("seed %d stripe %d lost %b: %v", seed, st, mask, err)
				}
				for i := 0; i < l.G; i++ {
					if string(shards[i]) != string(dataBlocks[i]) {
						t.Fatalf("seed %d stripe %d lost %b: data block %d decodes wrong", seed, st, mask, i)
					}
				}
			}
		}
	}
}

// TestPersistAcrossReconfiguration runs the protocol in simulation while
// the reconfiguration service replaces a data server, a parity server and
// a witness, and at every step stores every server (node.Persistent) and
// restores it into a server made for configuration 0, as a restarted
// machine does. The restored server must be in the same configuration and
// incarnation, with the same fences, blocks and degraded blocks; once
// everything settled (no rebuild in flight, which is not stored), it must
// hash equal to the original with its unanswered snapshots abandoned
// (their blocks are not stored either).
func TestPersistAcrossReconfiguration(t *testing.T) {
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 6, BlockSize: 16}
	seeds := sweep(6, 6, 2)
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		scripts := make([][][]msg.Op, 3)
		for i := range scripts {
			scripts[i] = workload.Generate(rng.Uint64, l, 0, 20, workload.DefaultMix)
		}
		m := int(seed) % l.N
		sc := &Scenario{Name: "persist", Layout: l, Scripts: scripts, Replace: []msg.Replace{{Role: erasure.RoleData, Machine: m, Inc: 1},
			{Role: erasure.RoleParity, Machine: (m + 1) % l.N, Inc: 1}, {Role: erasure.RoleWitness, Machine: (m + 2) % l.N, Inc: 1}}}
		restore := Restorer(msg.InitialConfig(l), sc.Code())
		s := sc.Init()
		checked := 0
		check := func(st mc.Step) error {
			if st.N%7 != 0 {
				return nil
			}
			for _, a := range st.After.Addrs() {
				checkRestore(t, restore, a, st.After.Node(a), false)
				checked++
			}
			return nil
		}
		replaced := func(s *mc.State) uint64 {
			return s.Node(msg.ReconfigAddr).(interface{ Config() msg.Config }).Config().Num
		}
		done := func(s *mc.State) bool { return mc.ClientsDone(s) && replaced(s) == 3 && Settled(s) }
		final, steps, err := mc.Simulate(s, mc.SimOptions{Seed: seed, MaxSteps: 400000, Loss: 0.02, Dup: 0.02, TimerChance: 0.02}, done, check)
		if err != nil {
			t.Fatal(err)
		}
		if !done(final) {
			t.Fatalf("seed %d: not settled after %d steps", seed, steps)
		}
		for _, a := range final.Addrs() {
			checkRestore(t, restore, a, final.Node(a), true)
		}
		t.Logf("seed %d: %d steps, %d restores checked", seed, steps, checked)
	}
}

// checkRestore stores n and restores it into the server restore makes,
// as a restarted machine does.
func checkRestore(t *testing.T, restore func(node.Addr, node.Node) node.Persistent, a node.Addr, n node.Node, whole bool) {
	t.Helper()
	p, ok := n.Clone().(node.Persistent)
	if !ok {
		return
	}
	st := node.Disk{}
	p.TrackChanges()
	p.Persist(st)
	r := restore(a, n)
	if r == nil {
		return
	}
	r.TrackChanges()
	if err := r.Restore(st); err != nil {
		t.Fatalf("restoring %T: %v", n, err)
	}
	type view interface {
		ConfigNum() uint64
		Incarnation() uint64
	}
	if a, b := n.(view), r.(view); a.ConfigNum() != b.ConfigNum() || a.Incarnation() != b.Incarnation() {
		t.Fatalf("%T restored in configuration %d incarnation %d, was %d, %d", n, b.ConfigNum(), b.Incarnation(), a.ConfigNum(), a.Incarnation())
	}
	switch n := n.(type) {
	case *data.Server:
		d := r.(*data.Server)
		if d.DegradedBlocks() != n.DegradedBlocks() || d.NextOpNum() != n.NextOpNum() || d.PendingOps() != n.PendingOps() {
			t.Fatalf("data/%d restored with %d degraded, op_num %d, %d pending; was %d, %d, %d", n.Machine(),
				d.DegradedBlocks(), d.NextOpNum(), d.PendingOps(), n.DegradedBlocks(), n.NextOpNum(), n.PendingOps())
		}
	case *parity.Server:
		q := r.(*parity.Server)
		if q.DegradedBlocks() != n.DegradedBlocks() || len(q.Prepares()) != len(n.Prepares()) {
			t.Fatalf("parity/%d restored with %d degraded, %d prepares; was %d, %d", n.Machine(),
				q.DegradedBlocks(), len(q.Prepares()), n.DegradedBlocks(), len(n.Prepares()))
		}
	}
	if !whole {
		return
	}
	// As a restarted machine does: rebuilds and retries resume (Init).
	// Timer flags are not stored; let one retry timer fire on both.
	r.Init(nodetest.New(a))
	o := n.Clone()
	if x, ok := o.(interface{ AbandonUnanswered() }); ok {
		x.AbandonUnanswered()
	}
	o.Timer(nodetest.New(a), nil)
	r.Timer(nodetest.New(a), nil)
	if r.Hash() != o.Hash() {
		t.Logf("original %+v", o)
		t.Logf("restored %+v", r)
		t.Fatalf("%T on machine %d: restored state hashes differently", n, n.(interface{ Machine() int }).Machine())
	}
}
