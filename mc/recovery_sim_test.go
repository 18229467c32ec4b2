package mc

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/workload"
	"github.com/anishathalye/porcupine"
)

// replaceRun is one seeded randomized run in which the reconfiguration
// service replaces servers while clients run, with message loss,
// duplication and reordering. The replaced servers may be crashed first.
type replaceRun struct {
	layout       erasure.Layout
	clients, ops int
	loss, dup    float64
	seed         uint64
	replace      []msg.Replace
	crash        bool // crash each replaced server before asking
}

func (r replaceRun) run(t *testing.T) *State {
	t.Helper()
	code, err := erasure.NewCode(r.layout.G, r.layout.F)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(r.seed, 11))
	scripts := make([][][]msg.Op, r.clients)
	for i := range scripts {
		scripts[i] = workload.Generate(rng.Uint64, r.layout, 0, r.ops, workload.DefaultMix)
	}
	cfg := msg.InitialConfig(r.layout)
	nodes := Amalgam(cfg, code, scripts)
	AddReconfig(nodes, cfg, r.replace)
	s := NewState(nodes)
	rec := NewRecorder(s)
	opt := SimOptions{Seed: r.seed, MaxSteps: 400000, Loss: r.loss, Dup: r.dup, TimerChance: 0.02}
	check := func(st Step) error {
		if err := rec.Step(st); err != nil {
			return err
		}
		return ParityConsistent(st.After, r.layout, code)
	}
	if r.crash {
		// Crash the servers to be replaced as the operator asks for it.
		asked := func(s *State) bool { return s.Node(OperatorAddr).(*Operator).Sent() || ClientsDone(s) }
		s, _, err = Simulate(s, opt, asked, check)
		if err != nil {
			t.Fatalf("seed %d: %v", r.seed, err)
		}
		for _, rp := range r.replace {
			if s, err = s.Apply(Event{Kind: Crash, Node: roleAddr(rp.Role, rp.Machine)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	final, steps, err := Simulate(s, opt, ClientsDone, check)
	if err != nil {
		t.Fatalf("seed %d: %v", r.seed, err)
	}
	if !ClientsDone(final) {
		t.Fatalf("seed %d: clients not done after %d steps", r.seed, steps)
	}
	hist := rec.History()
	if res := porcupine.CheckOperationsTimeout(workload.Model(r.layout), hist, 10*time.Second); res != porcupine.Ok {
		for _, op := range hist {
			t.Logf("client %d [%d,%d] %s -> %s", op.ClientId, op.Call, op.Return,
				workload.DescribeTxn(op.Input.([]msg.Op)), workload.DescribeReply(op.Output.(msg.Reply)))
		}
		t.Fatalf("seed %d: history of %d operations is %s, not linearizable", r.seed, len(hist), res)
	}
	return final
}

func roleAddr(r erasure.Role, m int) node.Addr {
	switch r {
	case erasure.RoleData:
		return msg.DataAddr(m)
	case erasure.RoleParity:
		return msg.ParityAddr(m)
	}
	return msg.WitnessAddr(m)
}

func TestRandomizedReplaceData(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 16}
	seeds := 200
	if testing.Short() {
		seeds = 30
	}
	replaced := 0
	for seed := 1; seed <= seeds; seed++ {
		m := seed % l.N
		final := replaceRun{layout: l, clients: 3, ops: 30, loss: 0.05, dup: 0.05, seed: uint64(seed),
			replace: []msg.Replace{{Role: erasure.RoleData, Machine: m, Inc: 1}}, crash: seed%2 == 0}.run(t)
		if rc := final.Node(msg.ReconfigAddr).(*reconfig.Service); rc.Config().Num == 1 {
			replaced++
		}
	}
	if replaced < seeds/2 {
		t.Fatalf("only %d of %d runs replaced the data server: the test exercises too little", replaced, seeds)
	}
	t.Logf("%d seeds (half with the old data server crashed), %d with the replacement done before the clients finished", seeds, replaced)
}
