package check

import (
	"fmt"
	"github.com/amalgam-store/amalgam/mc"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
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
	crash        bool          // crash each server of replace before asking
	suspected    []msg.Replace // asked with replace, of servers that stay alive (false suspicions)
	pause        time.Duration // background rebuild pause (SetRebuildPause)
	runStripes   int           // stripes per snapshot run (SetRebuildRun)
	window       int           // background runs in flight (SetRebuildWindow)
	watch        func(mc.Step) // if set, sees every step of the run
}

func (r replaceRun) run(t *testing.T) *mc.State {
	t.Helper()
	final, err := r.try()
	if err != nil {
		t.Fatal(err)
	}
	return final
}

// try runs the simulation and its oracles: no error means every client
// finished, parity stayed consistent and the history is linearizable.
func (r replaceRun) try() (*mc.State, error) {
	code, err := erasure.NewCode(r.layout.G, r.layout.F)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(r.seed, 11))
	scripts := make([][][]msg.Op, r.clients)
	for i := range scripts {
		scripts[i] = workload.Generate(rng.Uint64, r.layout, 0, r.ops, workload.DefaultMix)
	}
	cfg := msg.InitialConfig(r.layout)
	nodes := Amalgam(cfg, code, scripts)
	AddReconfig(nodes, cfg, append(slices.Clone(r.replace), r.suspected...))
	setRebuildRun(nodes, r.runStripes)
	for _, n := range nodes {
		if p, ok := n.(interface{ SetRebuildPause(time.Duration) }); ok {
			p.SetRebuildPause(r.pause)
		}
		if p, ok := n.(interface{ SetRebuildWindow(int) }); ok {
			p.SetRebuildWindow(r.window)
		}
	}
	s := mc.NewState(nodes)
	rec := NewRecorder(s)
	opt := mc.SimOptions{Seed: r.seed, MaxSteps: 400000, Loss: r.loss, Dup: r.dup, TimerChance: 0.02}
	check := func(st mc.Step) error {
		if r.watch != nil {
			r.watch(st)
		}
		if err := rec.Step(st); err != nil {
			return err
		}
		if err := Recoverable(st.After, r.layout); err != nil {
			return err
		}
		return ParityConsistent(st.After, r.layout, code)
	}
	if r.crash {
		// mc.Crash the servers to be replaced as the operator asks for it.
		asked := func(s *mc.State) bool { return s.Node(OperatorAddr).(*Operator).Sent() || mc.ClientsDone(s) }
		if s, _, err = mc.Simulate(s, opt, asked, check); err != nil {
			return nil, fmt.Errorf("seed %d: %w", r.seed, err)
		}
		for _, rp := range r.replace {
			if s, err = s.Apply(mc.Event{Kind: mc.Crash, Node: msg.RoleAddr(rp.Role, rp.Machine)}); err != nil {
				return nil, err
			}
		}
	}
	final, steps, err := mc.Simulate(s, opt, mc.ClientsDone, check)
	if err != nil {
		return final, fmt.Errorf("seed %d: %w", r.seed, err)
	}
	if !mc.ClientsDone(final) {
		return final, fmt.Errorf("seed %d: clients not done after %d steps", r.seed, steps)
	}
	// Let the replacements finish rebuilding in the background; then every
	// stripe must be quiescent and its parity must encode its data.
	quiet := func(s *mc.State) bool {
		for st := 0; st < r.layout.Stripes; st++ {
			if !Quiescent(s, r.layout, st) {
				return false
			}
		}
		return Settled(s)
	}
	if final, _, err = mc.Simulate(final, opt, quiet, check); err != nil {
		return final, fmt.Errorf("seed %d: settling (every stripe rebuilt and quiescent): %w", r.seed, err)
	}
	hist := rec.History()
	// No timeout: one that ran out would report Unknown, a failure that
	// depends on the machine's load, not on the history.
	if res := porcupine.CheckOperationsTimeout(workload.Model(r.layout), hist, 0); res != porcupine.Ok {
		return final, fmt.Errorf("seed %d: history of %d operations is %s, not linearizable", r.seed, len(hist), res)
	}
	return final, nil
}

func TestRandomizedReplaceParity(t *testing.T) {
	seeds := sweep(150, 40, 20)
	for seed := 1; seed <= seeds; seed++ {
		l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 16}
		rs := []msg.Replace{{Role: erasure.RoleParity, Machine: seed % l.N, Inc: 1}}
		if seed%3 == 0 { // and a data server at once: it pre-empts the parity replacement if that is still stopping
			rs = append(rs, msg.Replace{Role: erasure.RoleData, Machine: (seed + 2) % l.N, Inc: 1})
		}
		replaceRun{layout: l, clients: 3, ops: 30, loss: 0.05, dup: 0.05, seed: uint64(seed), replace: rs,
			crash: seed%2 == 0}.run(t)
	}
}

func TestRandomizedReplaceWitness(t *testing.T) {
	seeds := sweep(100, 30, 15)
	for seed := 1; seed <= seeds; seed++ {
		l := erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 6, BlockSize: 16}
		rs := []msg.Replace{{Role: erasure.RoleWitness, Machine: seed % l.N, Inc: 1}}
		if seed%2 == 0 {
			rs = append(rs, msg.Replace{Role: erasure.RoleData, Machine: (seed + 1) % l.N, Inc: 1})
		}
		replaceRun{layout: l, clients: 3, ops: 30, loss: 0.05, dup: 0.05, seed: uint64(seed), replace: rs,
			crash: seed%3 == 0}.run(t)
	}
}

func TestRandomizedReplaceData(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 16}
	seeds := sweep(200, 60, 30)
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

// replaceSeed is the randomized replacement run of seed: odd seeds replace
// one data server, even seeds two (one after the other, f=2), and every
// fourth seed crashes the replaced servers first.
func replaceSeed(seed int) replaceRun {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 16}
	rs := []msg.Replace{{Role: erasure.RoleData, Machine: seed % l.N, Inc: 1}}
	if seed%2 == 0 {
		rs = append(rs, msg.Replace{Role: erasure.RoleData, Machine: (seed + 1) % l.N, Inc: 1})
	}
	return replaceRun{layout: l, clients: 3, ops: 30, loss: 0.05, dup: 0.05, seed: uint64(seed),
		replace: rs, crash: seed%4 == 0}
}

func TestRandomizedReplaceTwoDataServers(t *testing.T) {
	seeds := sweep(200, 60, 30)
	both := 0
	for seed := 2; seed <= 2*seeds; seed += 2 {
		final := replaceSeed(seed).run(t)
		if final.Node(msg.ReconfigAddr).(*reconfig.Service).Config().Num == 2 {
			both++
		}
	}
	// Clients may finish before the operator asks; most runs must replace both.
	if both < seeds/2 {
		t.Fatalf("only %d of %d runs replaced both data servers: the test exercises too little", both, seeds)
	}
	t.Logf("%d seeds (a quarter with the servers crashed), %d with both replacements done before the clients finished", seeds, both)
}

// pauseSeed is replaceSeed's run with a pause between background
// rebuilds (--rebuild-rate), and a live parity server of the same stripes
// suspected too, asked together with the data servers. With two data
// servers replaced (even seeds), f=2 blocks of the stripes they share
// with the parity server are degraded until one of them has rebuilt: the
// service must postpone the parity replacement until then (SLC, thesis
// 3.4.2), or the stripes are lost. With the data servers crashed (every
// fourth seed), whatever order the requests arrive in: a parity
// replacement started first cannot finish without the crashed data
// servers' answers, and their replacements pre-empt it.
// runSeed is replaceSeed with three times the stripes, so that stripes 0,
// 5 and 10 (and so on) have the same servers, snapshot runs of up to 3
// stripes, and a parity server replaced too in every third seed that
// replaces one data server (crashed with it when the data server is).
func runSeed(seed int) replaceRun {
	r := replaceSeed(seed)
	r.layout.Stripes = 15
	r.runStripes = 3
	if seed%3 == 0 && len(r.replace) == 1 {
		r.replace = append(r.replace, msg.Replace{Role: erasure.RoleParity, Machine: (seed + 3) % r.layout.N, Inc: 1})
	}
	return r
}

// Multi-stripe snapshot runs rebuild data and parity servers under load.
func TestRandomizedReplaceMultiStripe(t *testing.T) {
	seeds := sweep(60, 30, 16)
	for seed := 1; seed <= seeds; seed++ {
		runSeed(seed).run(t)
	}
	t.Logf("%d seeds", seeds)
}

// Several background runs in flight at once (the runtime's default), at
// data and parity servers: runs of up to 2 stripes, 3 in flight, and a
// parity replacement in every seed.
func TestRandomizedReplaceWindow(t *testing.T) {
	seeds := sweep(60, 30, 16)
	for seed := 1; seed <= seeds; seed++ {
		r := runSeed(seed)
		r.runStripes, r.window = 2, 3
		if len(r.replace) == 1 {
			r.replace = append(r.replace, msg.Replace{Role: erasure.RoleParity, Machine: (seed + 3) % r.layout.N, Inc: 1})
		}
		r.run(t)
	}
	t.Logf("%d seeds", seeds)
}

func pauseSeed(seed int) replaceRun {
	r := replaceSeed(seed)
	r.suspected = []msg.Replace{{Role: erasure.RoleParity, Machine: (seed + 3) % r.layout.N, Inc: 1}}
	r.pause = 20 * time.Millisecond
	return r
}

// With a pause between background rebuilds, replacements still settle,
// and the pause survives the new incarnation's start.
func TestRandomizedReplaceWithRebuildPause(t *testing.T) {
	seeds := sweep(80, 30, 16)
	all, postponed := 0, 0
	for seed := 1; seed <= seeds; seed++ {
		r := pauseSeed(seed)
		held := false
		r.watch = func(st mc.Step) {
			held = held || len(st.After.Node(msg.ReconfigAddr).(*reconfig.Service).Postponed()) > 0
		}
		final := r.run(t)
		if held {
			postponed++
		}
		if final.Node(msg.ReconfigAddr).(*reconfig.Service).Config().Num == uint64(len(r.replace)+len(r.suspected)) {
			all++
		}
		for _, rp := range append(slices.Clone(r.replace), r.suspected...) {
			n := final.Node(msg.RoleAddr(rp.Role, rp.Machine)).(interface{ RebuildPause() time.Duration })
			if n.RebuildPause() != r.pause {
				t.Fatalf("seed %d: %s lost its rebuild pause", seed, msg.RoleAddr(rp.Role, rp.Machine))
			}
		}
	}
	if all < seeds/2 {
		t.Fatalf("only %d of %d runs made every replacement", all, seeds)
	}
	if postponed < seeds/4 {
		t.Fatalf("only %d of %d runs postponed a replacement (SLC)", postponed, seeds)
	}
	t.Logf("%d seeds (even ones: two data servers and a parity server of their stripes), %d with every replacement done and rebuilt "+
		"with a pause, %d with a replacement postponed until a rebuild", seeds, all, postponed)
}
