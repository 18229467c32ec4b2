//go:build mutants

package online

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
)

// A data server that commits with f-1 acknowledgements: the online search
// predicts the violation from a cut of the live cluster, and the saved
// trace replays offline from the saved cut.
func TestOnlinePredictsMutant(t *testing.T) {
	data.Mutant = "commit-f-1"
	t.Cleanup(func() { data.Mutant = "" })
	lc := load(t, 3)
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
	const want = "committed deltas at f+1 servers, committed in op order (3.4.1)"
	if f.Predicate != want {
		t.Fatalf("predicted %q, want %q", f.Predicate, want)
	}
	rp, err := Replay(f.Cut, f.Trace)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Predicate != want || len(rp.Events) != f.Depth {
		t.Fatalf("replay: %q after %d events, want %q after %d", rp.Predicate, len(rp.Events), want, f.Depth)
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
