// Package check holds what the model checker of mc/ checks in Amalgam:
// clusters of the unmodified data, parity and witness servers, the
// invariants of the thesis (section 3.4), the named scenarios that
// amalgam-cli mc runs, and the randomized drivers with their oracles.
// The baselines' scenarios are in check/baselines; Registry holds both.
package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/amalgam-store/amalgam/check/baselines"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Scenario is an Amalgam checking setup: the cluster, the clients'
// scripts, the events allowed, the invariants and a search plan. MC is
// the engine's scenario built from it.
type Scenario struct {
	Name   string
	Doc    string
	Layout erasure.Layout
	// Scripts holds one script per workload client ("client/i").
	Scripts [][][]msg.Op
	// Settings bound failures and timer firings per path.
	Settings mc.Settings
	// MaxDepth is the default depth bound of BFS, DFS and random walks.
	MaxDepth int
	// Plan, if set, builds the phases of the guided strategy (see
	// mc.Scenario.Plan).
	Plan func(sc *mc.Scenario) []mc.Phase
	// Points, if set, are the recovery points of the deep strategy (see
	// points for the default).
	Points func() []mc.Predicate
	// Extra invariants are checked after the library's.
	Extra []mc.Predicate
	// Replace, when set, adds the reconfiguration service and an operator
	// that asks it for these replacements at a moment the search chooses.
	Replace []msg.Replace
	// RebuildRun is how many stripes a server's snapshot run covers
	// (SetRebuildRun; 0: one).
	RebuildRun int
	// EarlySends, with restarts, adds the crashes of a host that releases
	// a batch's unordered messages before it is durable when it handled
	// a message that EarlySends selects (mc.State.SendsBeforeDurableOn;
	// scenario_early.go).
	EarlySends func(a node.Addr, m node.Message) bool
}

// MC is the scenario as the engine runs it (a new value each call).
func (sc *Scenario) MC() *mc.Scenario {
	return &mc.Scenario{Name: sc.Name, Doc: sc.Doc, System: "amalgam", Init: sc.Init, Invariants: sc.Invariants,
		Settings: sc.Settings, MaxDepth: sc.MaxDepth, Plan: sc.plan(), Describe: DescribeNode, Points: sc.points}
}

// Code is the scenario's erasure code.
func (sc *Scenario) Code() *erasure.Code {
	code, err := erasure.NewCode(sc.Layout.G, sc.Layout.F)
	if err != nil {
		panic(fmt.Sprintf("check: scenario %s: %v", sc.Name, err))
	}
	return code
}

// Init builds the initial state.
func (sc *Scenario) Init() *mc.State {
	cfg := msg.InitialConfig(sc.Layout)
	nodes := Amalgam(cfg, sc.Code(), sc.Scripts)
	if sc.Replace != nil {
		AddReconfig(nodes, cfg, sc.Replace)
	}
	setRebuildRun(nodes, sc.RebuildRun)
	s := mc.NewState(nodes)
	if sc.Settings.MaxRestarts != 0 {
		s.Restartable(Restorer(cfg, sc.Code()))
		if persistMutant != nil {
			s.CorruptDisk(persistMutant)
		}
		if releaseEarly != nil {
			s.PersistBehindOn(releaseEarly)
		}
		if sc.EarlySends != nil {
			s.SendsBeforeDurableOn(sc.EarlySends)
		}
	}
	return s
}

// Invariants is the Amalgam predicate library for the scenario's layout,
// with SLC when the scenario replaces servers, then Extra.
func (sc *Scenario) Invariants() []mc.Predicate {
	inv := []mc.Predicate{
		ParityConsistency(sc.Layout, sc.Code()),
		CommitInvariant(sc.Layout),
		AtMostOnce(),
		Linearizable(sc.Layout),
	}
	if sc.Replace != nil {
		inv = append(inv, StripesRecoverable(sc.Layout))
	}
	return append(inv, sc.Extra...)
}

// Options is a search of the scenario with strategy st and its invariants.
func (sc *Scenario) Options(st mc.Strategy) mc.Options { return sc.MC().Options(st) }

// Run searches the scenario with strategy st (see mc.Scenario.Run).
func (sc *Scenario) Run(st mc.Strategy, common mc.Options) *mc.Result { return sc.MC().Run(st, common) }

var amalgam []*Scenario

// register adds an Amalgam scenario to Registry.
func register(sc *Scenario) *Scenario {
	amalgam = append(amalgam, sc)
	return sc
}

// Scenarios lists Amalgam's scenarios in the order they were defined.
func Scenarios() []*Scenario { return amalgam }

// Failover lists the failure detector's scenarios (failover.go), which
// run the detector alone rather than an Amalgam cluster.
func Failover() []*mc.Scenario { return []*mc.Scenario{FailoverOne, FailoverTwo} }

// Registry is every scenario amalgam-cli mc offers: Amalgam's by name,
// then the baselines'.
func Registry() *mc.Registry {
	var r mc.Registry
	byName := slices.Clone(amalgam)
	slices.SortFunc(byName, func(a, b *Scenario) int { return strings.Compare(a.Name, b.Name) })
	for _, sc := range byName {
		r.Add(sc.MC())
	}
	r.Add(Failover()...)
	r.Add(baselines.Scenarios()...)
	return &r
}

func write(b uint64, v byte, n int) msg.Op {
	d := make([]byte, n)
	for i := range d {
		d[i] = v
	}
	return msg.Op{Kind: msg.OpWrite, Block: b, Data: d}
}

func read(b uint64) msg.Op { return msg.Op{Kind: msg.OpRead, Block: b} }

func add(b uint64, d uint64) msg.Op { return msg.Op{Kind: msg.OpAdd, Block: b, Delta: d} }

// The scenarios. Blocks are 8 bytes; layouts use one or two stripes so
// that exhaustive search stays within reach.
var (
	// Normal is one client writing then reading a block in a g=3, f=2
	// cluster of 5 machines, without failures or retries: the whole graph
	// is small and is explored to exhaustion.
	Normal = register(&Scenario{
		Name:   "normal",
		Doc:    "g=3 f=2 w=0, 5 machines, 1 stripe; one client: write b0, read b0; no failures, no retries",
		Layout: erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 1, BlockSize: 8},
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {read(0)}},
		},
	})

	// NormalLossy is Normal with one message loss, one duplicate and two
	// client retries per path.
	NormalLossy = register(&Scenario{
		Name:     "normal-lossy",
		Doc:      "normal, with up to 1 drop, 1 duplicate and 2 timer firings per path",
		Layout:   Normal.Layout,
		Scripts:  Normal.Scripts,
		Settings: mc.Settings{MaxDrops: 1, MaxDuplicates: 1, MaxTimerFires: 2},
	})

	// TwoClients puts two clients on the two first data blocks of one
	// stripe (two shards): their deltas meet at the same parity servers,
	// and each reads the other's block.
	TwoClients = register(&Scenario{
		Name:   "two-clients",
		Doc:    "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, read b1; client 1: add b1, read b0; no failures",
		Layout: Normal.Layout,
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {read(1)}},
			{{add(1, 2)}, {read(0)}},
		},
	})

	// SameShard has two clients on one block: their operations are
	// pending together at one data server, so commit order matters.
	SameShard = register(&Scenario{
		Name:   "same-shard",
		Doc:    "g=3 f=2 w=0, 5 machines, 1 stripe; clients 0 and 1 both add to b0 then read it; no failures",
		Layout: Normal.Layout,
		Scripts: [][][]msg.Op{
			{{add(0, 1)}, {read(0)}},
			{{add(0, 2)}, {read(0)}},
		},
	})

	// Witnesses is g=2, f=1 with one witness: the commit quorum (f=1) may
	// be the witness alone.
	Witnesses = register(&Scenario{
		Name:   "witness",
		Doc:    "g=2 f=1 w=1, 4 machines, 1 stripe; one client: write b0, add b0, read b0; no failures",
		Layout: erasure.Layout{N: 4, G: 2, F: 1, W: 1, Stripes: 1, BlockSize: 8},
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {add(0, 1)}, {read(0)}},
		},
	})

	// Txn runs one multi-block transaction over two stripes of shard 0.
	Txn = register(&Scenario{
		Name:   "txn",
		Doc:    "g=2 f=1 w=0, 3 machines, 2 stripes; one client: txn{write b0, add b4} (both on shard 0, stripes 0 and 1), then read b4; no failures",
		Layout: erasure.Layout{N: 3, G: 2, F: 1, W: 0, Stripes: 2, BlockSize: 8},
		Scripts: [][][]msg.Op{
			{{write(0, 3, 8), add(txnBlock, 5)}, {read(txnBlock)}},
		},
	})
)

// TwoStripes has two clients on shard 0, each on a block of a different
// stripe: their PREPAREs travel to different parity servers, so the
// acknowledgements of the later operation can arrive first.
var TwoStripes = register(&Scenario{
	Name:   "two-stripes",
	Doc:    "g=2 f=1 w=0, 3 machines, 2 stripes; client 0 writes b0 (shard 0, stripe 0), client 1 adds to shard 0's block in stripe 1; no failures",
	Layout: Txn.Layout,
	Scripts: [][][]msg.Op{
		{{write(0, 3, 8)}},
		{{add(txnBlock, 5)}},
	},
})

// Backlog has three clients on shard 0, one of them with a transaction
// over both stripes: three operations pending at once, whose
// acknowledgements come from two parity servers in any order.
var Backlog = register(&Scenario{
	Name: "backlog",
	Doc: "g=2 f=1 w=0, 3 machines, 2 stripes; client 0: txn{write b0, add b3} (shard 0, stripes 0 and 1); client 1 adds to b3; " +
		"client 2 writes b0; no failures",
	Layout:  Txn.Layout,
	Scripts: [][][]msg.Op{{{write(0, 3, 8), add(txnBlock, 5)}}, {{add(txnBlock, 7)}}, {{write(0, 4, 8)}}},
})

// txnBlock is shard 0's block in stripe 1 of the Txn layout.
var txnBlock = func() uint64 {
	l := erasure.Layout{N: 3, G: 2, F: 1, W: 0, Stripes: 2, BlockSize: 8}
	for _, b := range l.ShardBlocks(0) {
		if st, _ := l.Locate(b); st == 1 {
			return b
		}
	}
	panic("check: no block of shard 0 in stripe 1")
}()
