package mc_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/examples/paxos"
	"github.com/amalgam-store/amalgam/examples/twophase"
	"github.com/amalgam-store/amalgam/mc"
)

// The engine's tests run the example protocols (examples/), which use
// only the public API; Amalgam's own checks are in check/.

func scenarios() []*mc.Scenario {
	return []*mc.Scenario{twophase.Scenario(3, false), paxos.Scenario(3, []string{"A"}, false)}
}

// TestStrategiesAgree: BFS with 1 and 2 workers, DFS, and handlers run
// afresh instead of reused, all find the same states.
func TestStrategiesAgree(t *testing.T) {
	for _, sc := range scenarios() {
		want := sc.Run(mc.BFS, mc.Options{Workers: 1})
		for _, o := range []mc.Options{{Workers: 2}, {Strategy: mc.DFS}, {Workers: 2, NoMemo: true}} {
			st := o.Strategy
			if st == "" {
				st = mc.BFS
			}
			r := sc.Run(st, o)
			if r.Outcome != mc.Exhausted || r.States != want.States {
				t.Errorf("%s %s %+v: %s %d states, want %d", sc.Name, st, o, r.Outcome, r.States, want.States)
			}
		}
	}
}

// TestDepthBoundedDFSMatchesBFS: with a depth bound, DFS (re-expanding
// states reached at a smaller depth) finds exactly BFS's states.
func TestDepthBoundedDFSMatchesBFS(t *testing.T) {
	sc := paxos.Scenario(3, []string{"A", "B"}, false)
	for _, d := range []int{3, 6, 9} {
		b := sc.Run(mc.BFS, mc.Options{MaxDepth: d, Workers: 2})
		f := sc.Run(mc.DFS, mc.Options{MaxDepth: d})
		if b.Outcome != mc.Exhausted || f.Outcome != mc.Exhausted || b.States != f.States {
			t.Fatalf("depth %d: bfs %s %d states, dfs %s %d states", d, b.Outcome, b.States, f.Outcome, f.States)
		}
	}
}

func TestRandomWalksDeterministic(t *testing.T) {
	sc := paxos.Scenario(3, []string{"A", "B"}, false)
	a := sc.Run(mc.Random, mc.Options{Seed: 3, Walks: 50, MaxDepth: 40})
	b := sc.Run(mc.Random, mc.Options{Seed: 3, Walks: 50, MaxDepth: 40})
	if a.Outcome != mc.WalksDone || a.States != b.States || a.States < 10 {
		t.Fatalf("random walks: %s %d states, then %d", a.Outcome, a.States, b.States)
	}
}

// TestIncrementalFingerprint walks random paths and checks after every
// step that the incrementally kept fingerprint equals a computation from
// scratch, for states built directly and in scratch buffers.
func TestIncrementalFingerprint(t *testing.T) {
	set := mc.Settings{MaxDrops: mc.Unlimited, MaxDuplicates: mc.Unlimited, MaxTimerFires: mc.Unlimited, MaxCrashes: 2}
	for _, sc := range append(scenarios(), paxos.Scenario(3, []string{"A", "B"}, false)) {
		for seed := uint64(1); seed <= 20; seed++ {
			rng := rand.New(rand.NewPCG(seed, 5))
			s := sc.Init()
			var x mc.Scratch
			for step := 0; step < 60; step++ {
				evs := s.Events(set)
				if len(evs) == 0 {
					break
				}
				e := evs[rng.IntN(len(evs))]
				next, err := s.Apply(e)
				if err != nil {
					t.Fatalf("%s seed %d step %d: %v", sc.Name, seed, step, err)
				}
				if err := mc.CheckSums(next); err != nil {
					t.Fatalf("%s seed %d step %d (%v): %v", sc.Name, seed, step, e, err)
				}
				in, err := x.Apply(s, e)
				if err != nil || in.Fingerprint() != next.Fingerprint() {
					t.Fatalf("%s seed %d step %d (%v): scratch state differs (%v)", sc.Name, seed, step, e, err)
				}
				if fz := x.Freeze(); fz.Fingerprint() != next.Fingerprint() || mc.CheckSums(fz) != nil {
					t.Fatalf("%s seed %d step %d (%v): frozen state differs", sc.Name, seed, step, e)
				}
				s = next
			}
		}
	}
}

func TestSelfChecks(t *testing.T) {
	for _, sc := range scenarios() {
		r := sc.Run(mc.BFS, mc.Options{Checks: mc.Checks{Determinism: true, CloneHash: true, Idempotence: true}})
		if r.Outcome != mc.Exhausted {
			t.Fatalf("%s: %s: %s: %s", sc.Name, r.Outcome, r.Predicate, r.Explanation)
		}
	}
}

func TestGoalPruneGuided(t *testing.T) {
	sc := paxos.Scenario(3, []string{"A"}, false)
	o := sc.Options(mc.BFS)
	o.Goals = []mc.Predicate{mc.ClientsDonePred()}
	r := mc.Search(sc.Init(), o)
	// The shortest path: Put, Prepare, Promise (with its own, a
	// majority), Accept, Accepted, PutOK, Decided at server/1, Get there
	// and GetOK.
	if r.Outcome != mc.GoalFound || r.Predicate != "all clients done" || len(r.Trace) != 9 {
		t.Fatalf("goal: %s %s, trace %d", r.Outcome, r.Predicate, len(r.Trace))
	}
	all := sc.Run(mc.BFS, mc.Options{})
	o.Goals = nil
	o.Prunes = []mc.Predicate{mc.RepliesAtLeast(1)}
	if p := mc.Search(sc.Init(), o); p.Outcome != mc.Exhausted || p.States >= all.States {
		t.Fatalf("prune: %s %d states of %d", p.Outcome, p.States, all.States)
	}
	if g := sc.Run(mc.Guided, mc.Options{}); g.Outcome != mc.Exhausted || len(g.Trace) == 0 {
		t.Fatalf("guided: %s, trace %d", g.Outcome, len(g.Trace))
	}
}

func TestPredicateCombinators(t *testing.T) {
	yes := mc.Pred("yes", func(*mc.State) (bool, string) { return true, "y" })
	no := mc.Pred("no", func(*mc.State) (bool, string) { return false, "n" })
	s := scenarios()[0].Init()
	for _, c := range []struct {
		p    mc.Predicate
		want bool
	}{
		{mc.And(yes, yes), true}, {mc.And(yes, no), false}, {mc.Or(no, yes), true}, {mc.Or(no, no), false},
		{mc.Not(no), true}, {mc.Not(yes), false}, {mc.Implies(no, no), true}, {mc.Implies(yes, no), false}, {mc.Implies(yes, yes), true},
	} {
		if ok, why := c.p.Check(s); ok != c.want {
			t.Errorf("%s = %v (%s), want %v", c.p.Name, ok, why, c.want)
		}
	}
	if ok, why := mc.And(yes, no).Check(s); ok || !strings.HasPrefix(why, "no:") {
		t.Errorf("And explanation %q", why)
	}
	if n := mc.Implies(yes, no).Name; n != "(yes implies no)" {
		t.Errorf("name %q", n)
	}
}

// TestTraceSaveReplay saves a violation's trace, replays it, and refuses
// it for another scenario, altered or corrupted.
func TestTraceSaveReplay(t *testing.T) {
	sc := twophase.Scenario(3, true)
	r := sc.Run(mc.BFS, mc.Options{Workers: 2})
	if r.Outcome != mc.Violation {
		t.Fatalf("%s", r.Outcome)
	}
	n := len(r.Trace)
	mc.Explain(sc, r)
	if len(r.Trace) > n {
		t.Fatalf("explained trace grew from %d to %d", n, len(r.Trace))
	}
	path := filepath.Join(t.TempDir(), "trace.json")
	if err := mc.NewTraceFile(sc, r).Save(path); err != nil {
		t.Fatal(err)
	}
	tf, err := mc.LoadTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := mc.Replay(sc, tf)
	if err != nil || rp.Predicate != r.Predicate || len(rp.Events) != len(r.Trace) {
		t.Fatalf("replay: %v, ends with %q", err, rp.Predicate)
	}
	if _, err := mc.Replay(twophase.Scenario(4, true), tf); err == nil || !strings.Contains(err.Error(), `not "2pc-4"`) {
		t.Fatalf("other scenario: %v", err)
	}
	renamed := *tf
	renamed.Scenario = "2pc-4"
	if _, err := mc.Replay(twophase.Scenario(4, true), &renamed); err == nil || !strings.Contains(err.Error(), "another initial state") {
		t.Fatalf("renamed: %v", err)
	}
	raw, _ := os.ReadFile(path)
	if _, err := mc.ParseTrace(raw[:len(raw)/2]); err == nil || !strings.Contains(err.Error(), "corrupted JSON") {
		t.Fatalf("truncated: %v", err)
	}
	bad := *tf
	bad.Events = append([]mc.TraceEvent(nil), tf.Events...)
	bad.Events[0].Timer = "12345"
	if _, err := mc.Replay(sc, &bad); err == nil || !strings.Contains(err.Error(), "does not replay at step 1") {
		t.Fatalf("altered event: %v", err)
	}
}

// TestHistory: the clients' history (mc.History) has each client's
// completed operations with their outputs, then its pending one.
func TestHistory(t *testing.T) {
	sc := paxos.Scenario(3, []string{"A", "B"}, false)
	o := sc.Options(mc.BFS)
	o.Goals = []mc.Predicate{mc.RepliesAtLeast(3)}
	r := mc.Search(sc.Init(), o)
	if r.Outcome != mc.GoalFound {
		t.Fatalf("%s", r.Outcome)
	}
	h := mc.History(r.Final)
	done, pending := 0, 0
	for _, op := range h {
		if op.Output == nil {
			pending++
		} else {
			done++
		}
	}
	if done != 3 || pending != 1 || len(r.Final.Clients()) != 2 {
		t.Fatalf("history %+v", h)
	}
	if ok, why := mc.Linearizable(paxos.Register()).Check(r.Final); !ok {
		t.Fatal(why)
	}
}

type inner struct {
	B []byte
	M map[string]int
}

type outer struct {
	P    *inner
	Nil  *inner
	Name string
}

// TestDescribe: the fallback description follows pointers, prints bytes
// in hex and maps in key order, and never an address.
func TestDescribe(t *testing.T) {
	v := outer{P: &inner{B: []byte{1, 0xab}, M: map[string]int{"z": 1, "a": 2}}, Name: "x"}
	want := `outer{P:inner{B:01ab M:map["a":2 "z":1]} Nil:nil Name:"x"}`
	for i := 0; i < 5; i++ {
		if got := mc.Describe(&v); got != want {
			t.Fatalf("Describe = %s, want %s", got, want)
		}
	}
}
