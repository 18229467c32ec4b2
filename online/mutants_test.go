//go:build mutants

package online

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
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
	steerFor     = flag.Duration("steer-for", 300*time.Millisecond, "TestSteeringTable: how long a filter lasts")
	checkFor     = flag.Duration("check-for", time.Second, "TestSteeringTable: how long a check filter lasts")
	holdFor      = flag.Duration("hold-for", time.Second, "TestSteeringTable: how long a hold filter lasts")
	steerMutants = flag.String("steer-mutants", "backlog-out-of-order,backlog-txn-first-stripe", "TestSteeringTable: the mutants")
	steerWindows = flag.Int("steer-windows", 4, "TestSteeringTable: stall windows per run")
	steerWriters = flag.Int("steer-writers", 2, "TestSteeringTable: writers")
	steerAbandon = flag.Duration("steer-abandon", 300*time.Millisecond, "TestSteeringTable: a writer gives up an operation after this long")
	steerStates  = flag.Int("steer-states", 3000, "TestSteeringTable: states a search explores at most")
	steerFires   = flag.Int("steer-timer-fires", 0, "TestSteeringTable: timer firings in a search")
	steerLog     = flag.Bool("steer-log", false, "TestSteeringTable: log the checker's lines and the windows, with times")
	steerModes   = flag.String("steer-modes", "off,steer,steer-check,steer-hold,steer+check", "TestSteeringTable: the modes")
)

// steerMode is a mode of TestSteeringTable: steering (filters from
// predictions), check filters among its candidates, hold filters as its
// candidates, and the immediate check on every machine.
type steerMode struct {
	name                        string
	steer, checks, holds, check bool
}

var steerModeList = []steerMode{{"off", false, false, false, false}, {"steer", true, false, false, false},
	{"steer-check", true, true, false, false}, {"steer-hold", true, false, true, false}, {"steer+check", true, false, false, true}}

// steerWindow is one stall window of a run (stallSchedule) and what
// happened in it.
type steerWindow struct {
	violated  bool // a data server step broke data.CheckStep and was applied
	inGap     bool // such a step came before the stall began
	postponed bool // the immediate check postponed a message
	held      bool // a check filter postponed a message, or a hold filter held one
	predicted bool // a search predicted a violation ahead (1 event or more)
	atCut     bool // a cut showed a violation (0 events)
	filters   int  // filters installed
}

// steerRun is one seeded run of a mutant cluster under load, with seeded
// stalls and online checking.
type steerRun struct {
	windows []steerWindow
	bad     int64 // steps that broke data.CheckStep and were applied
	ops     int64
}

func runSteered(t *testing.T, mutant string, seed uint64, mode steerMode) steerRun {
	steer, check := mode.steer, mode.check
	var out steerRun
	t.Run(fmt.Sprintf("%s/%d", mutant, seed), func(t *testing.T) {
		data.Mutant = mutant
		defer func() { data.Mutant = "" }()
		// Without the check, the same check in Monitor mode counts the
		// steps that break data.CheckStep (as refused; all are applied).
		ic := runtime.DataCommitCheck()
		ic.Monitor = !check
		lc, stop, h := seededLoadAbandon(t, seed, *steerWriters, *steerAbandon, immediateCheck(ic))
		counts := func() (bad, postponed, held int64) {
			for _, m := range lc.Machines {
				st := m.ImmediateStats()
				postponed += st.Refused
				bad += st.LetThrough
				held += st.Steered + m.HoldStats()
			}
			if !check {
				bad, postponed = postponed, 0
			}
			return bad, postponed, held
		}
		o := Options{Every: 100 * time.Millisecond, MaxStates: *steerStates, Consequence: true,
			Settings: mc.Settings{MaxTimerFires: *steerFires}, SteerFor: *steerFor, CheckFilters: mode.checks, CheckFor: *checkFor,
			HoldFilters: mode.holds, HoldFor: *holdFor}
		if steer {
			o.Steer = LocalSteerer(lc.Machines)
		}
		start := time.Now()
		logf := func(format string, a ...any) {
			if *steerLog {
				t.Logf("%5dms "+format, append([]any{time.Since(start).Milliseconds()}, a...)...)
			}
		}
		if *steerLog {
			o.Log = writerFunc(func(p []byte) { logf("%s", strings.TrimSuffix(string(p), "\n")) })
		}
		ctx, cancel := context.WithCancel(context.Background())
		type result struct {
			rep *Report
			err error
		}
		done := make(chan result, 1)
		go func() {
			rep, err := Run(ctx, fastLocal(lc.Machines), o)
			done <- result{rep, err}
		}()
		var ends []time.Time
		for _, w := range stallSchedule(seed, *steerWindows) {
			b0, p0, h0 := counts()
			time.Sleep(w.gap)
			bs, _, _ := counts()
			logf("stall data/%d for %v", w.k, w.d)
			stall(lc, w)
			time.Sleep(w.d + stallSettle)
			b1, p1, h1 := counts()
			if *steerLog {
				var per []int64
				for _, m := range lc.Machines {
					per = append(per, m.ImmediateStats().Refused)
				}
				logf("window ends: %d bad steps, %d held by check or hold filters; per machine, counted so far: %v", b1-b0, h1-h0, per)
			}
			ends = append(ends, time.Now())
			out.windows = append(out.windows, steerWindow{violated: b1 > b0, inGap: bs > b0, postponed: p1 > p0, held: h1 > h0})
			out.bad += b1 - b0
		}
		cancel()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		stop()
		in := func(at time.Time) int {
			for i, e := range ends {
				if at.Before(e) {
					return i
				}
			}
			return -1
		}
		for _, f := range r.rep.Found {
			if i := in(f.At); i >= 0 && f.Depth == 0 {
				out.windows[i].atCut = true
			} else if i >= 0 {
				out.windows[i].predicted = true
			}
		}
		for _, f := range r.rep.Installed {
			if i := in(f.At); i >= 0 {
				out.windows[i].filters++
			}
		}
		out.ops = h.n.Load()
	})
	return out
}

// fastLocal is Local with the snapshot rate limit at 20 ms, so that
// pulls every 100 ms are not refused when a node's previous snapshot came
// late in its round.
func fastLocal(machines []*runtime.Machine) Source {
	return func(ctx context.Context) ([]*runtime.Snapshot, error) {
		return all(len(machines), func(i int) (*runtime.Snapshot, error) {
			return machines[i].Snapshot(ctx, runtime.SnapshotLimits{MinInterval: 20 * time.Millisecond})
		})
	}
}

// TestSteeringTable is the results table of execution steering
// (docs/model-checking.md, "Online checking"): per mutant, -steer-runs
// seeded runs without steering, with steering filters, and with steering
// filters and the immediate check, each run -steer-windows seeded stall
// windows (stallSchedule, the same in every mode). A window has the
// violation when a data server made a step that breaks data.CheckStep
// (counted by the check in Monitor mode, or let through by the check
// after MaxHold).
func TestSteeringTable(t *testing.T) {
	if *steerRuns == 0 {
		t.Skip("-steer-runs N runs the table")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %-11s %4s %7s %9s %8s %6s %7s %4s %6s %6s %6s %7s %7s %7s\n", "mutant", "mode", "runs", "windows", "predicted",
		"violated", "in-gap", "avoided", "held", "caught", "missed", "at-cut", "filters", "ops/run", "bad/kop")
	for _, mutant := range strings.Split(*steerMutants, ",") {
		base := 0
		for _, mode := range steerModeList {
			if !slices.Contains(strings.Split(*steerModes, ","), mode.name) {
				continue
			}
			var windows, predicted, violated, inGap, atCut, avoided, held, caught, filters int
			var ops, bad int64
			for seed := range uint64(*steerRuns) {
				r := runSteered(t, mutant, seed+1, mode)
				ops, bad = ops+r.ops, bad+r.bad
				for _, w := range r.windows {
					windows++
					filters += w.filters
					if w.predicted {
						predicted++
					}
					if w.atCut {
						atCut++
					}
					if w.inGap {
						inGap++
					}
					switch {
					case w.violated:
						violated++
					case mode.check && w.postponed:
						caught++
					case w.predicted && w.filters > 0:
						avoided++
						if w.held {
							held++
						}
					}
				}
			}
			missed := violated
			if !mode.steer {
				base = violated
				avoided, held, caught, missed = 0, 0, 0, 0
			}
			fmt.Fprintf(&b, "%-24s %-11s %4d %7d %9d %8d %6d %7d %4d %6d %6d %6d %7d %7d %7.1f\n", mutant, mode.name, *steerRuns, windows, predicted,
				violated, inGap, avoided, held, caught, missed, atCut, filters, ops/int64(*steerRuns), 1000*float64(bad)/float64(max(ops, 1)))
			if mode.steer && base > 0 {
				fmt.Fprintf(&b, "%-24s %-11s windows with the violation: %d, %d without steering: %.0f%% fewer\n", "", "", violated, base,
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
func TestImmediateCheckCatchesMutant(t *testing.T) { catchesMutant(t, false) }

// The same with check filters (runtime.CheckPrefix) on the data servers'
// PREPARE-OKs instead of the check on every machine.
func TestCheckFilterCatchesMutant(t *testing.T) { catchesMutant(t, true) }

func catchesMutant(t *testing.T, filters bool) {
	data.Mutant = "commit-f-1"
	t.Cleanup(func() { data.Mutant = "" })
	setup := immediateCheck(runtime.DataCommitCheck())
	if filters {
		setup = func(lc *runtime.Local) {
			for k := range testLayout.N {
				d := msg.DataAddr(k)
				if err := LocalSteerer(lc.Machines)(context.Background(), Filter{d, d, runtime.CheckPrefix + "PrepareOK"}, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	lc, stop, h := seededLoad(t, 1, 3, setup)
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
		st.Checked, st.Refused, st.LetThrough, st.Steered = st.Checked+s.Checked, st.Refused+s.Refused, st.LetThrough+s.LetThrough, st.Steered+s.Steered
	}
	postponed, other := st.Refused, st.Steered
	if filters {
		postponed, other = other, postponed
	}
	if postponed == 0 || other != 0 || st.LetThrough != 0 {
		t.Fatalf("the check postponed %d (refused %d, check filters %d) and let through %d of %d PREPARE-OKs, want some postponed by the %s and none let through",
			postponed, st.Refused, st.Steered, st.LetThrough, st.Checked, map[bool]string{false: "check", true: "check filters"}[filters])
	}
	for _, f := range rep.Found {
		if f.Depth == 0 {
			t.Fatalf("a cut violates %q with the immediate check on: %s", f.Predicate, f.Explanation)
		}
	}
	t.Logf("%d operations; %d PREPARE-OKs checked, %d postponed; %d cuts, %d predictions ahead", h.n.Load(), st.Checked, postponed, len(rep.States), len(rep.Found))
}
