//go:build mutants

package online

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/runtime"
)

const inv341 = "committed deltas at f+1 servers, committed in op order (3.4.1)"

// A data server that commits with f-1 acknowledgements: the online search
// predicts the violation from a cut of the live cluster, and the saved
// trace replays offline from the saved cut.
func TestOnlinePredictsMutant(t *testing.T) { predictsMutant(t, "commit-f-1") }

// A data server that commits an operation whose predecessor lacks a
// quorum (two operations on different stripes, the later one acknowledged
// first): predicted from a live cut, replayed offline.
func TestOnlinePredictsOutOfOrder(t *testing.T) { predictsMutant(t, "commit-out-of-order") }

// A data server that commits a multi-stripe transaction on its first
// stripe's quorum, under a workload with transactions: predicted from a
// live cut, replayed offline.
func TestOnlinePredictsTxnFirstStripe(t *testing.T) { predictsMutant(t, "txn-first-stripe") }

func predictsMutant(t *testing.T, mutant string) {
	data.Mutant = mutant
	t.Cleanup(func() { data.Mutant = "" })
	var lc *runtime.Local
	if mutant == "txn-first-stripe" {
		lc, _, _ = seededLoad(t, 1, 3, nil) // transactions over both stripes
	} else {
		lc = load(t, 3)
	}
	dir := t.TempDir()
	rep, err := Run(context.Background(), Local(lc.Machines), Options{Every: 150 * time.Millisecond, MaxStates: 3000,
		Cuts: 100, StopAtViolation: true, Dir: dir, Consequence: true, Settings: mc.Settings{MaxTimerFires: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) == 0 {
		t.Fatalf("no violation predicted from %d cuts (%d rounds, %d rejected)", len(rep.States), rep.Pulled, rep.Rejected)
	}
	f := rep.Found[0]
	if f.Predicate != inv341 {
		t.Fatalf("predicted %q, want %q", f.Predicate, inv341)
	}
	rp, err := Replay(f.Cut, f.Trace)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Predicate != inv341 || len(rp.Events) != f.Depth {
		t.Fatalf("replay: %q after %d events, want %q after %d", rp.Predicate, len(rp.Events), inv341, f.Depth)
	}
	c, err := LoadCut(f.Cut)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	c.Scenario().PrintTrace(&b, rp.Events)
	t.Logf("the trace from the cut:\n%s", b.String())
	t.Logf("predicted in %d events from cut %d (%d rounds, %d rejected, %d dropped)", f.Depth, len(rep.States), rep.Pulled, rep.Rejected, rep.Dropped)
}

var (
	steerRuns    = flag.Int("steer-runs", 0, "TestSteeringTable: seeded runs per mutant and mode (0: skip)")
	steerFor     = flag.Duration("steer-for", time.Second, "TestSteeringTable: how long a filter lasts")
	steerMutants = flag.String("steer-mutants", "commit-f-1,txn-first-stripe", "TestSteeringTable: the mutants")
)

// steerRun is one seeded run of a mutant cluster under load with online
// checking: its outcome for the table.
type steerRun struct {
	predicted  bool // a violation predicted ahead (depth > 0) before any seen at a cut
	manifested bool // a cut violated the invariant (depth 0): the bug happened on the live cluster
	installed  int
	refused    int64 // messages the immediate check postponed (without it: steps breaking data.CheckStep)
	through    int64 // messages it let through after MaxHold
	ops        int64
}

func runSteered(t *testing.T, mutant string, seed uint64, steer, check bool) steerRun {
	var out steerRun
	t.Run(fmt.Sprintf("%s/%d", mutant, seed), func(t *testing.T) {
		data.Mutant = mutant
		defer func() { data.Mutant = "" }()
		// Without the check, the same check in Monitor mode counts the
		// steps that break data.CheckStep.
		ic := runtime.DataCommitCheck()
		ic.Monitor = !check
		lc, stop, h := seededLoad(t, seed, 3, immediateCheck(ic))
		o := Options{Every: 150 * time.Millisecond, MaxStates: 3000, Cuts: 12, Consequence: true,
			Settings: mc.Settings{MaxTimerFires: 1}, SteerFor: *steerFor}
		if steer {
			o.Steer = LocalSteerer(lc.Machines)
		}
		rep, err := Run(context.Background(), Local(lc.Machines), o)
		if err != nil {
			t.Fatal(err)
		}
		stop()
		for _, f := range rep.Found {
			if f.Depth == 0 {
				out.manifested = true
			} else if !out.manifested {
				out.predicted = true
			}
		}
		out.installed = len(rep.Installed)
		for _, m := range lc.Machines {
			st := m.ImmediateStats()
			out.refused += st.Refused
			out.through += st.LetThrough
		}
		out.ops = h.n.Load()
	})
	return out
}

// TestSteeringTable is the results table of execution steering
// (docs/model-checking.md, "Online checking"): per mutant, -steer-runs
// seeded runs without steering, with steering filters, and with steering
// filters and the immediate check. A run has the violation when a cut
// shows it (depth 0) or a data server made a step that breaks
// data.CheckStep (counted by the check in Monitor mode, or let through by
// the check after MaxHold).
func TestSteeringTable(t *testing.T) {
	if *steerRuns == 0 {
		t.Skip("-steer-runs N runs the table")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %-12s %4s %9s %8s %7s %7s %6s %7s %8s %8s %8s\n", "mutant", "mode", "runs", "predicted", "violated", "avoided", "caught", "missed",
		"at-cut", "filters", "ops/run", "bad/kop")
	for _, mutant := range strings.Split(*steerMutants, ",") {
		base := 0
		for _, mode := range []struct {
			name         string
			steer, check bool
		}{{"off", false, false}, {"steer", true, false}, {"steer+check", true, true}} {
			var predicted, violated, atCut, avoided, caught, filters int
			var ops, bad int64
			for seed := range uint64(*steerRuns) {
				r := runSteered(t, mutant, seed+1, mode.steer, mode.check)
				ops += r.ops
				filters += r.installed
				badSteps := r.refused
				if mode.check {
					badSteps = r.through
				}
				bad += badSteps
				if r.predicted {
					predicted++
				}
				if r.manifested {
					atCut++
				}
				switch {
				case r.manifested || badSteps > 0:
					violated++
				case mode.check && r.refused > 0:
					caught++
				case r.predicted && r.installed > 0:
					avoided++
				}
			}
			missed := violated
			if !mode.steer {
				base = violated
				avoided, caught, missed = 0, 0, 0
			}
			fmt.Fprintf(&b, "%-20s %-12s %4d %9d %8d %7d %7d %6d %7d %8d %8d %8.1f\n", mutant, mode.name, *steerRuns, predicted, violated, avoided, caught, missed,
				atCut, filters, ops/int64(*steerRuns), 1000*float64(bad)/float64(max(ops, 1)))
			if mode.steer && base > 0 {
				fmt.Fprintf(&b, "%-20s %-12s runs with the violation: %d, %d without steering: %.0f%% avoided\n", "", "", violated, base,
					100*float64(base-violated)/float64(base))
			}
		}
	}
	t.Logf("\n%s", b.String())
}

// With the immediate check on, data servers that commit with f-1
// acknowledgements never do: the check postpones the first PREPARE-OK of
// each operation until the second is there, applies both in one batch,
// and no cut shows the violation.
func TestImmediateCheckCatchesMutant(t *testing.T) {
	data.Mutant = "commit-f-1"
	t.Cleanup(func() { data.Mutant = "" })
	lc, stop, h := seededLoad(t, 1, 3, immediateCheck(runtime.DataCommitCheck()))
	rep, err := Run(context.Background(), Local(lc.Machines), Options{Every: 150 * time.Millisecond, MaxStates: 1000, Cuts: 5, Consequence: true})
	if err != nil {
		t.Fatal(err)
	}
	for h.n.Load() < 200 {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	var st runtime.ImmediateStats
	for _, m := range lc.Machines {
		s := m.ImmediateStats()
		st.Checked, st.Refused, st.LetThrough = st.Checked+s.Checked, st.Refused+s.Refused, st.LetThrough+s.LetThrough
	}
	if st.Refused == 0 || st.LetThrough != 0 {
		t.Fatalf("the check refused %d and let through %d of %d PREPARE-OKs, want some refused and none let through", st.Refused, st.LetThrough, st.Checked)
	}
	for _, f := range rep.Found {
		if f.Depth == 0 {
			t.Fatalf("a cut violates %q with the immediate check on: %s", f.Predicate, f.Explanation)
		}
	}
	t.Logf("%d operations; %d PREPARE-OKs checked, %d postponed; %d cuts, %d predictions ahead", h.n.Load(), st.Checked, st.Refused, len(rep.States), len(rep.Found))
}
