//go:build mutants

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/amalgam-store/amalgam/check"
	"github.com/amalgam-store/amalgam/mc"
)

// TestMCRunMutants runs, for every mutant, the mc run search that
// check.Mutants documents (scenario, strategy, seed; BFS with 2 workers,
// walks with 1, so the run is the documented one), bounded by 90 s: it
// must report a violation of the expected invariant, and its saved trace
// must replay to the same violation with the mutant, and not without it.
// Run with: go test -tags mutants -run TestMCRunMutants -v ./cmd/amalgam-cli
func TestMCRunMutants(t *testing.T) {
	for _, m := range check.Mutants() {
		t.Run(m.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.json")
			workers := "1"
			if m.Strategy == mc.BFS {
				workers = "2"
			}
			out, _, err := runMC(t, "--output", "json", "mc", "run", m.Scenario, "--mutant", m.Name, "--strategy", string(m.Strategy),
				"--seed", fmt.Sprint(m.Seed), "--workers", workers, "--max-time", "90s", "--quiet", "--save-trace", path)
			if exitCode(err) != exitViolation {
				t.Fatalf("run: %v (status %d)\n%s", err, exitCode(err), out)
			}
			var run mcSummary
			if err := json.Unmarshal([]byte(out), &run); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if run.Violation == nil || run.Violation.Predicate != m.Finds {
				t.Fatalf("run: %s", out)
			}
			t.Logf("%s on %s (%s, seed %d): %.3fs, %d states, trace %d steps", m.Name, m.Scenario, m.Strategy, m.Seed,
				run.ElapsedS, run.States, run.Violation.TraceLength)
			out, _, err = runMC(t, "--output", "json", "mc", "replay", path, "--mutant", m.Name)
			var rp mcSummary
			if err != nil || json.Unmarshal([]byte(out), &rp) != nil || rp.Violation == nil || rp.Violation.Predicate != m.Finds ||
				rp.Violation.TraceLength != run.Violation.TraceLength {
				t.Fatalf("replay: %v\n%s", err, out)
			}
			if _, _, err := runMC(t, "mc", "replay", path); err == nil {
				t.Fatalf("the trace replays to the violation without the mutant")
			}
		})
	}
}
