package reconfig

// Tests that follow the thesis, chapter 3, for the reconfiguration
// service (3.3.2, 3.4.2). Each quotes (or closely paraphrases) the rule
// it checks.

import (
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// thesisService is the service over l, with a recording context; the
// service sends unordered messages only.
func thesisService(t *testing.T, l erasure.Layout) (*Service, *nodetest.Ctx) {
	t.Helper()
	s := New(msg.InitialConfig(l))
	ctx := nodetest.New(msg.ReconfigAddr)
	t.Cleanup(func() {
		if st := ctx.Effects().Kind(nodetest.Stream); len(st) != 0 {
			t.Errorf("the service streamed %v", st)
		}
	})
	return s, ctx
}

// stripeBackups lists Backups(st) as addresses.
func stripeBackups(l erasure.Layout, st int) []node.Addr {
	var out []node.Addr
	for i, m := range l.Backups(st) {
		out = append(out, backupAddr(l, i, m))
	}
	return out
}

// 3.3.2.1 step 1: "The reconfiguration service first requests that the
// parity servers no longer accept messages from the old data server and
// send the reconfiguration service their local set of prepares for the
// data server's shard." Witnesses take part too (3.3.3).
func TestThesis3321StopShardGoesToEveryBackupOfTheShard(t *testing.T) {
	s, ctx := thesisService(t, layout)
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 2, Inc: 1})
	var want []node.Addr
	for _, st := range layout.StripesAs(2, erasure.RoleData) {
		for _, a := range stripeBackups(layout, st) {
			if !slices.Contains(want, a) {
				want = append(want, a)
			}
		}
	}
	slices.Sort(want)
	effs := ctx.Take()
	if got := nodetest.Of[msg.StopShard](effs).Addrs(); !slices.Equal(got, want) || len(got) != len(effs) {
		t.Fatalf("stops to %v (of %v), want every parity server and witness sharing a stripe with data/2: %v", got, effs, want)
	}
	for _, m := range nodetest.Msgs[msg.StopShard](effs) {
		if m != (msg.StopShard{Num: 1, Shard: 2, Primary: 1}) {
			t.Fatalf("stop %+v, want configuration 1, shard 2, primary 1", m)
		}
	}
}

// 3.3.2.1 step 2 and footnote 4: the service needs "acknowledgements from
// a quorum of the parity servers which share stripes with the data
// server", of size p' - f + 1; with witnesses, p + w - f + 1 (3.3.3).
// Decision (docs/recovery.md): the quorum is per stripe, w+1 of each
// stripe's f+w backups, so that every commit quorum of every stripe meets
// an answer.
func TestThesis3321ReplacementWaitsForAQuorumOnEveryStripe(t *testing.T) {
	s, ctx := thesisService(t, layout)
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
	stripes := layout.StripesAs(0, erasure.RoleData)
	answered := map[node.Addr]bool{}
	answer := func(a node.Addr) {
		if !answered[a] {
			answered[a] = true
			s.Handle(ctx, a, msg.StopShardOK{Num: 1, Shard: 0})
		}
	}
	count := func(st int) int {
		n := 0
		for _, a := range stripeBackups(layout, st) {
			if answered[a] {
				n++
			}
		}
		return n
	}
	last := stripes[len(stripes)-1]
	for _, st := range stripes {
		for _, a := range stripeBackups(layout, st) {
			if count(st) < layout.W+1 && !(st == last && count(st) == layout.W) {
				answer(a)
			}
		}
	}
	if count(last) != layout.W {
		t.Fatalf("test setup: %d of stripe %d's backups answered, want w = %d", count(last), last, layout.W)
	}
	if s.Config().Num != 0 {
		t.Fatalf("replaced with %d of stripe %d's backups answering, want w+1 = %d", count(last), last, layout.W+1)
	}
	for _, a := range stripeBackups(layout, last) {
		if count(last) < layout.W+1 {
			answer(a)
		}
	}
	if cfg := s.Config(); cfg.Num != 1 || cfg.Data[0] != 2 || cfg.Changed != msg.DataAddr(0) {
		t.Fatalf("with a quorum on every stripe: configuration %+v, want 1 with data/0 incarnation 2", cfg)
	}
}

// 3.3.2.1 step 2: "The reconfiguration service sends the parity servers
// the new data server's ID as well as the set of PREPAREs P" (the chain
// starting at τ; chain_test.go checks the thesis's example and the
// multi-block rule of 3.3.4 on Chain itself).
func TestThesis3321NewConfigCarriesTheChain(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 1, BlockSize: 8}
	s, ctx := thesisService(t, l)
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
	p := func(op uint64) msg.Prepare {
		return msg.Prepare{Shard: 0, Primary: 1, OpNum: op, Stripe: 0, Stripes: []int{0}}
	}
	ctx.Reset()
	s.Handle(ctx, msg.ParityAddr(4), msg.StopShardOK{Num: 1, Shard: 0, OpNum: 1, Prepares: []msg.Prepare{p(2), p(4)}})
	effs := nodetest.Of[msg.NewConfig](ctx.Take())
	if len(effs) != 2*l.N { // data and parity servers; no witnesses (w = 0)
		t.Fatalf("NewConfig to %v, want every data and parity server", effs.Addrs())
	}
	for _, nc := range nodetest.Msgs[msg.NewConfig](effs) {
		in := nc.Install
		if nc.Config.Data[0] != 2 || in == nil || in.Shard != 0 || in.Upto != 2 || len(in.Chain) != 1 || in.Chain[0].OpNum != 2 {
			t.Fatalf("NewConfig %+v, want data/0 incarnation 2 and the chain [2] up to 2 (4 follows a gap)", nc)
		}
	}
}

// replaceWitness5 replaces witness/5 in l (it needs every data server of
// its stripes).
func replaceWitness5(t *testing.T, s *Service, ctx *nodetest.Ctx, l erasure.Layout) {
	t.Helper()
	num := s.Config().Num + 1
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleWitness, Machine: 5, Inc: s.Config().Witness[5]})
	for _, a := range nodetest.Of[msg.StopBackup](ctx.Take()).Addrs() {
		s.Handle(ctx, a, msg.StopBackupOK{Num: num, Role: erasure.RoleWitness, Machine: 5})
	}
	if s.Config().Num != num {
		t.Fatalf("witness/5 not replaced in configuration %d", num)
	}
}

// 3.3.2: "the reconfiguration service ensures that servers process
// successive completed reconfigurations in order (e.g., by numbering
// them)"; 3.4.1: "the only difference between C_i and C_i+1 is the
// replacement of a single server".
func TestThesis332ConfigurationsAreNumberedAndSentInOrder(t *testing.T) {
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 1, BlockSize: 8}
	s, ctx := thesisService(t, l)
	replaceWitness5(t, s, ctx, l)
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
	for _, a := range []node.Addr{msg.ParityAddr(3), msg.ParityAddr(4)} {
		s.Handle(ctx, a, msg.StopShardOK{Num: 2, Shard: 0})
	}
	h := s.History()
	if len(h) != 3 {
		t.Fatalf("history of %d configurations, want 3", len(h))
	}
	for i := 1; i < len(h); i++ {
		changed := 0
		for m := 0; m < l.N; m++ {
			for _, d := range []int{int(h[i].Data[m] - h[i-1].Data[m]), int(h[i].Parity[m] - h[i-1].Parity[m]), int(h[i].Witness[m] - h[i-1].Witness[m])} {
				changed += d
			}
		}
		if h[i].Num != uint64(i) || changed != 1 {
			t.Fatalf("configuration %d: number %d, %d incarnations changed; want one", i, h[i].Num, changed)
		}
	}
	// A server that has configuration 0 is sent 1, then 2.
	ctx.Reset()
	for want := uint64(1); want <= 2; want++ {
		s.Handle(ctx, msg.DataAddr(1), msg.ConfigOK{Num: want - 1})
		got := nodetest.Msgs[msg.NewConfig](ctx.Take().To(msg.DataAddr(1)))
		if len(got) != 1 || got[0].Config.Num != want {
			t.Fatalf("after ConfigOK{%d}: sent %+v, want configuration %d", want-1, got, want)
		}
	}
	s.Handle(ctx, msg.DataAddr(1), msg.ConfigOK{Num: 2})
	if effs := ctx.Take(); len(effs) != 0 {
		t.Fatalf("an up-to-date server was sent %v", effs)
	}
}

// 3.3.2.1 step 2: "the service saves this information until all parity
// servers have successfully processed the reconfiguration."
func TestThesis3321NewConfigResentUntilAcknowledged(t *testing.T) {
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 1, BlockSize: 8}
	s, ctx := thesisService(t, l)
	replaceWitness5(t, s, ctx, l)
	ctx.Reset()
	for _, a := range s.servers() {
		if a != msg.ParityAddr(4) {
			s.Handle(ctx, a, msg.ConfigOK{Num: 1})
		}
	}
	ctx.Reset()
	s.Timer(ctx, tick)
	effs := ctx.Take()
	if got := nodetest.Of[msg.NewConfig](effs).Addrs(); !slices.Equal(got, []node.Addr{msg.ParityAddr(4)}) {
		t.Fatalf("re-sent to %v, want only parity/4, which has not acknowledged", got)
	}
	if len(effs.Kind(nodetest.Timer)) != 1 {
		t.Fatalf("the retry timer was not set again: %v", effs)
	}
}

// 3.3.2.2: "The replacement of a parity server requires the approval of
// all data servers; if a data server is unavailable, it must first be
// replaced. Once all data servers agree to ignore future and locally
// cached PREPARE-OKs from the old parity server, a replacement parity
// server is initialized." 3.3.3: "Witnesses servers are replaced in the
// exact same manner as parity servers — with the unanimous consent of the
// data servers."
func TestThesis3322BackupReplacementNeedsEveryDataServer(t *testing.T) {
	for _, c := range []struct {
		role    erasure.Role
		machine int
	}{{erasure.RoleParity, 3}, {erasure.RoleWitness, 5}} {
		s, ctx := thesisService(t, layout)
		s.Handle(ctx, "admin", msg.Replace{Role: c.role, Machine: c.machine, Inc: 1})
		stops := nodetest.Of[msg.StopBackup](ctx.Take())
		var want []node.Addr
		for _, st := range layout.StripesAs(c.machine, c.role) {
			for pos := 0; pos < layout.G; pos++ {
				if a := msg.DataAddr(layout.DataMachine(st, pos)); !slices.Contains(want, a) {
					want = append(want, a)
				}
			}
		}
		slices.Sort(want)
		who := msg.RoleAddr(c.role, c.machine)
		if !slices.Equal(stops.Addrs(), want) {
			t.Fatalf("StopBackup to %v, want every data server sharing a stripe with %s: %v", stops.Addrs(), who, want)
		}
		for _, a := range want[:len(want)-1] {
			s.Handle(ctx, a, msg.StopBackupOK{Num: 1, Role: c.role, Machine: c.machine})
		}
		if s.Config().Num != 0 {
			t.Fatalf("%s replaced without every data server's approval", who)
		}
		s.Handle(ctx, want[len(want)-1], msg.StopBackupOK{Num: 1, Role: c.role, Machine: c.machine})
		cfg := s.Config()
		inc := cfg.Parity[c.machine]
		if c.role == erasure.RoleWitness {
			inc = cfg.Witness[c.machine]
		}
		if cfg.Num != 1 || inc != 2 || cfg.Changed != who {
			t.Fatalf("configuration %+v, want 1 with %s incarnation 2", cfg, who)
		}
	}
}

// 3.3.2: "the replacement of a data server can preempt the replacement of
// a parity or witness server". 3.3.2.2: "If a parity server replacement
// is preempted because a data server is not available, the
// reconfiguration service can still use the old parity server as part of
// the quorum to replace a data server."
func TestThesis3322DataReplacementPreemptsAndUsesOldParity(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 1, BlockSize: 8}
	s, ctx := thesisService(t, l)
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleParity, Machine: 3, Inc: 1})
	s.Handle(ctx, msg.DataAddr(0), msg.StopBackupOK{Num: 1, Role: erasure.RoleParity, Machine: 3})
	s.Handle(ctx, msg.DataAddr(2), msg.StopBackupOK{Num: 1, Role: erasure.RoleParity, Machine: 3})
	// data/1 is down: its replacement pre-empts parity/3's.
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 1, Inc: 1})
	ctx.Reset()
	s.Handle(ctx, msg.ParityAddr(3), msg.StopShardOK{Num: 1, Shard: 1}) // the old parity server counts
	if cfg := s.Config(); cfg.Num != 1 || cfg.Data[1] != 2 || cfg.Parity[3] != 1 {
		t.Fatalf("configuration %+v, want 1 replacing data/1 with parity/3's answer (w+1 = 1)", cfg)
	}
	// The parity replacement starts over in the next configuration.
	again := nodetest.Msgs[msg.StopBackup](ctx.Take())
	if len(again) != l.G || again[0].Num != 2 || again[0].Machine != 3 {
		t.Fatalf("after the data replacement: %+v, want parity/3's StopBackups for configuration 2", again)
	}
}

// 3.4.2, the Server Liveness Criterion: "for all stripes s, the number of
// servers [...] with either a parity block or data block in stripe s
// which have failed and not yet been replaced or whose block in stripe s
// is in a degraded state is less than or equal to f"; "If exactly f
// blocks in a stripe are currently degraded [...] and the reconfiguration
// service incorrectly replaces another server holding a block for that
// stripe, the stripe would be permanently lost." The service postpones
// such a replacement until a degraded server reports it rebuilt.
func TestThesis342SLCPostponesAReplacement(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 1, BlockSize: 8}
	s, ctx := thesisService(t, l)
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
	s.Handle(ctx, msg.ParityAddr(3), msg.StopShardOK{Num: 1, Shard: 0})
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleParity, Machine: 4, Inc: 1})
	for m := 0; m < l.G; m++ {
		s.Handle(ctx, msg.DataAddr(m), msg.StopBackupOK{Num: 2, Role: erasure.RoleParity, Machine: 4})
	}
	if got := s.Degraded(); s.Config().Num != 2 || !slices.Equal(got, []node.Addr{msg.DataAddr(0), msg.ParityAddr(4)}) {
		t.Fatalf("configuration %d, degraded %v; want 2 with data/0 and parity/4 degraded", s.Config().Num, got)
	}
	ctx.Reset()
	r := msg.Replace{Role: erasure.RoleData, Machine: 1, Inc: 1}
	s.Handle(ctx, "admin", r)
	if effs := ctx.Take(); len(effs) != 0 || !slices.Equal(s.Postponed(), []msg.Replace{r}) {
		t.Fatalf("with f = 2 blocks of the stripe degraded, replacing data/1: %v, want it postponed", effs)
	}
	s.Handle(ctx, msg.ParityAddr(4), msg.Rebuilt{Role: erasure.RoleParity, Machine: 4, Inc: 2})
	effs := ctx.Take()
	if stops := nodetest.Msgs[msg.StopShard](effs); len(stops) == 0 || stops[0].Shard != 1 || len(s.Postponed()) != 0 {
		t.Fatalf("after parity/4 rebuilt: %v, want data/1's replacement started", effs)
	}
	if oks := nodetest.Msgs[msg.RebuiltOK](effs.To(msg.ParityAddr(4))); len(oks) != 1 {
		t.Fatalf("Rebuilt not acknowledged: %v", effs)
	}
}

// 3.3.2: "the reconfiguration service will ensure that it gets the
// necessary promises from servers in the most recent configuration":
// answers for another configuration number, or from servers it did not
// ask, do not count.
func TestThesis332OnlyPromisesForThisReplacementCount(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 1, BlockSize: 8}
	s, ctx := thesisService(t, l)
	s.Handle(ctx, "admin", msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})
	s.Handle(ctx, msg.ParityAddr(3), msg.StopShardOK{Num: 2, Shard: 0}) // another configuration
	s.Handle(ctx, msg.ParityAddr(3), msg.StopShardOK{Num: 1, Shard: 1}) // another shard
	s.Handle(ctx, msg.DataAddr(1), msg.StopShardOK{Num: 1, Shard: 0})   // not asked
	if s.Config().Num != 0 {
		t.Fatalf("replaced on answers it did not ask for: configuration %d", s.Config().Num)
	}
	s.Handle(ctx, msg.ParityAddr(4), msg.StopShardOK{Num: 1, Shard: 0})
	if s.Config().Num != 1 {
		t.Fatal("a promise from parity/4 (w+1 = 1) did not complete the replacement")
	}
}
