package mc

import (
	"fmt"
	"sort"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// Scenario is a named, documented checking setup: the cluster, the
// clients' scripts, the events allowed, the invariants and a search plan.
type Scenario struct {
	Name   string
	Doc    string
	Layout erasure.Layout
	// Scripts holds one script per workload client ("client/i").
	Scripts [][][]msg.Op
	// Settings bound failures and timer firings per path.
	Settings Settings
	// MaxDepth is the default depth bound of BFS, DFS and random walks.
	MaxDepth int
	// Plan, if set, builds the phases of the guided strategy; the default
	// plan is Settings without failures to the first reply, then Settings.
	Plan func(sc *Scenario) []Phase
	// Extra invariants are checked after the library's.
	Extra []Predicate
	// Replace, when set, adds the reconfiguration service and an operator
	// that asks it for these replacements at a moment the search chooses.
	Replace []msg.Replace
	// InitState and Predicates, when set, replace the Amalgam cluster Init
	// builds (Layout, Scripts and Replace are then unused) and the Amalgam
	// predicate library of Invariants, so that scenarios of other systems
	// (the baselines' in bench/simcheck) run, explain, save and replay
	// their traces like Amalgam's.
	InitState  func() *State
	Predicates func() []Predicate
}

// Code is the scenario's erasure code.
func (sc *Scenario) Code() *erasure.Code {
	code, err := erasure.NewCode(sc.Layout.G, sc.Layout.F)
	if err != nil {
		panic(fmt.Sprintf("mc: scenario %s: %v", sc.Name, err))
	}
	return code
}

// Init builds the initial state (InitState's, if set).
func (sc *Scenario) Init() *State {
	if sc.InitState != nil {
		return sc.InitState()
	}
	cfg := msg.InitialConfig(sc.Layout)
	nodes := Amalgam(cfg, sc.Code(), sc.Scripts)
	if sc.Replace != nil {
		AddReconfig(nodes, cfg, sc.Replace)
	}
	return NewState(nodes)
}

// Invariants is the Amalgam predicate library for the scenario's layout
// (Predicates', if set), with SLC when the scenario replaces servers, then
// Extra.
func (sc *Scenario) Invariants() []Predicate {
	if sc.Predicates != nil {
		return append(sc.Predicates(), sc.Extra...)
	}
	inv := []Predicate{
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
func (sc *Scenario) Options(st Strategy) Options {
	return Options{Strategy: st, Settings: sc.Settings, Invariants: sc.Invariants(), MaxDepth: sc.MaxDepth}
}

// Phases is the scenario's guided plan.
func (sc *Scenario) Phases() []Phase {
	if sc.Plan != nil {
		return sc.Plan(sc)
	}
	calm := sc.Options(BFS)
	calm.Settings = Settings{}
	calm.Goals = []Predicate{RepliesAtLeast(1)}
	calm.MaxDepth = 0
	rest := sc.Options(BFS)
	return []Phase{{Name: "first reply, no failures", Options: calm}, {Name: "failures", Options: rest}}
}

// Run searches the scenario with strategy st; common supplies limits,
// workers, seed and progress (its Strategy, Settings and predicates are
// ignored). A zero MaxDepth in common keeps the scenario's.
func (sc *Scenario) Run(st Strategy, common Options) *Result {
	if st == Guided {
		return RunGuided(sc.Init(), sc.Phases(), common)
	}
	o := sc.Options(st)
	o.MaxTime, o.MaxStates, o.Workers, o.Seed, o.Walks = common.MaxTime, common.MaxStates, common.Workers, common.Seed, common.Walks
	o.Progress, o.ProgressEvery, o.Checks = common.Progress, common.ProgressEvery, common.Checks
	if common.MaxDepth != 0 {
		o.MaxDepth = common.MaxDepth
	}
	return Search(sc.Init(), o)
}

var scenarios = map[string]*Scenario{}

// Register adds a scenario to the list the CLI offers.
func Register(sc *Scenario) *Scenario {
	if _, dup := scenarios[sc.Name]; dup {
		panic("mc: scenario registered twice: " + sc.Name)
	}
	scenarios[sc.Name] = sc
	return sc
}

// Scenarios lists the registered scenarios by name.
func Scenarios() []*Scenario {
	out := make([]*Scenario, 0, len(scenarios))
	for _, sc := range scenarios {
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a scenario by name.
func Lookup(name string) (*Scenario, error) {
	if sc, ok := scenarios[name]; ok {
		return sc, nil
	}
	var names []string
	for _, sc := range Scenarios() {
		names = append(names, sc.Name)
	}
	return nil, fmt.Errorf("unknown scenario %q (have %v)", name, names)
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
	Normal = Register(&Scenario{
		Name:   "normal",
		Doc:    "g=3 f=2 w=0, 5 machines, 1 stripe; one client: write b0, read b0; no failures, no retries",
		Layout: erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 1, BlockSize: 8},
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {read(0)}},
		},
	})

	// NormalLossy is Normal with one message loss, one duplicate and two
	// client retries per path.
	NormalLossy = Register(&Scenario{
		Name:     "normal-lossy",
		Doc:      "normal, with up to 1 drop, 1 duplicate and 2 timer firings per path",
		Layout:   Normal.Layout,
		Scripts:  Normal.Scripts,
		Settings: Settings{MaxDrops: 1, MaxDuplicates: 1, MaxTimerFires: 2},
	})

	// TwoClients puts two clients on the two first data blocks of one
	// stripe (two shards): their deltas meet at the same parity servers,
	// and each reads the other's block.
	TwoClients = Register(&Scenario{
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
	SameShard = Register(&Scenario{
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
	Witnesses = Register(&Scenario{
		Name:   "witness",
		Doc:    "g=2 f=1 w=1, 4 machines, 1 stripe; one client: write b0, add b0, read b0; no failures",
		Layout: erasure.Layout{N: 4, G: 2, F: 1, W: 1, Stripes: 1, BlockSize: 8},
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {add(0, 1)}, {read(0)}},
		},
	})

	// Txn runs one multi-block transaction over two stripes of shard 0.
	Txn = Register(&Scenario{
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
var TwoStripes = Register(&Scenario{
	Name:   "two-stripes",
	Doc:    "g=2 f=1 w=0, 3 machines, 2 stripes; client 0 writes b0 (shard 0, stripe 0), client 1 adds to shard 0's block in stripe 1; no failures",
	Layout: Txn.Layout,
	Scripts: [][][]msg.Op{
		{{write(0, 3, 8)}},
		{{add(txnBlock, 5)}},
	},
})

// txnBlock is shard 0's block in stripe 1 of the Txn layout.
var txnBlock = func() uint64 {
	l := erasure.Layout{N: 3, G: 2, F: 1, W: 0, Stripes: 2, BlockSize: 8}
	for _, b := range l.ShardBlocks(0) {
		if st, _ := l.Locate(b); st == 1 {
			return b
		}
	}
	panic("mc: no block of shard 0 in stripe 1")
}()
