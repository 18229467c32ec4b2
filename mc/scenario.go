package mc

import (
	"fmt"
	"io"

	"github.com/amalgam-store/amalgam/node"
)

// Scenario is a named, documented checking setup of any system: how to
// build the initial state, the events allowed, the invariants and a
// search plan. Traces save and replay by the scenario's name.
type Scenario struct {
	Name string
	Doc  string
	// System names the system checked, for listings ("amalgam", "paxos").
	System string
	// Init builds the initial state; each call builds a new one.
	Init func() *State
	// Invariants builds the predicates every reachable state must satisfy.
	Invariants func() []Predicate
	// Settings bound failures and timer firings per path.
	Settings Settings
	// MaxDepth is the default depth bound of BFS, DFS and random walks.
	MaxDepth int
	// Plan, if set, builds the phases of the guided strategy; the default
	// plan is Settings without failures to the first reply, then Settings.
	Plan func(sc *Scenario) []Phase
	// Points, if set, builds the recovery points of the deep strategy
	// (RunDeep): states worth an exhaustive search from, such as a
	// replacement started or a node restarted.
	Points func() []Predicate
	// Describe, if set, describes nodes in traces before node.Describer
	// and Describe do (for node types the scenario's author does not own).
	Describe func(n node.Node) (string, bool)
}

// Options is a search of the scenario with strategy st and its invariants.
func (sc *Scenario) Options(st Strategy) Options {
	var inv []Predicate
	if sc.Invariants != nil {
		inv = sc.Invariants()
	}
	return Options{Strategy: st, Settings: sc.Settings, Invariants: inv, MaxDepth: sc.MaxDepth}
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
// workers, seed, progress and checks (its Strategy, Settings and
// predicates are ignored). A zero MaxDepth in common keeps the scenario's.
func (sc *Scenario) Run(st Strategy, common Options) *Result {
	if st == Guided {
		return RunGuided(sc.Init(), sc.Phases(), common)
	}
	if st == Deep {
		return sc.RunDeep(common, DeepOptions{})
	}
	o := sc.Options(st)
	o.MaxTime, o.MaxStates, o.Workers, o.Seed, o.Walks = common.MaxTime, common.MaxStates, common.Workers, common.Seed, common.Walks
	o.Progress, o.ProgressEvery, o.Checks, o.NoMemo = common.Progress, common.ProgressEvery, common.Checks, common.NoMemo
	o.SleepSets, o.Symmetry, o.NodeDepth = common.SleepSets, common.Symmetry, common.NodeDepth
	if common.MaxDepth != 0 {
		o.MaxDepth = common.MaxDepth
	}
	return Search(sc.Init(), o)
}

// DescribeNode describes n with the scenario's Describe, or Describe.
func (sc *Scenario) DescribeNode(n node.Node) string {
	if sc.Describe != nil {
		if d, ok := sc.Describe(n); ok {
			return d
		}
	}
	return Describe(n)
}

// PrintTrace writes events from the scenario's initial state (PrintTrace
// with the scenario's node descriptions).
func (sc *Scenario) PrintTrace(w io.Writer, events []Event) {
	PrintTrace(w, sc.Init(), events, sc.DescribeNode)
}

// Registry is a list of scenarios with unique names, for tools that
// offer them.
type Registry struct {
	list   []*Scenario
	byName map[string]*Scenario
}

// Add registers scenarios; a name registered twice panics.
func (r *Registry) Add(scs ...*Scenario) {
	if r.byName == nil {
		r.byName = map[string]*Scenario{}
	}
	for _, sc := range scs {
		if _, dup := r.byName[sc.Name]; dup {
			panic("mc: scenario registered twice: " + sc.Name)
		}
		r.byName[sc.Name] = sc
		r.list = append(r.list, sc)
	}
}

// All lists the scenarios in the order they were added.
func (r *Registry) All() []*Scenario { return r.list }

// Lookup finds a scenario by name.
func (r *Registry) Lookup(name string) (*Scenario, error) {
	if sc, ok := r.byName[name]; ok {
		return sc, nil
	}
	var names []string
	for _, sc := range r.All() {
		names = append(names, sc.Name)
	}
	return nil, fmt.Errorf("unknown scenario %q (have %v)", name, names)
}
