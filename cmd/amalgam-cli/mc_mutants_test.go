//go:build mutants

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
)

// TestMCSaveTraceReplay runs a mutant through the CLI: mc run finds the
// violation and saves its trace, mc replay reaches the same violation,
// and the trace edited to name another scenario is refused.
// Run with: go test -tags mutants -run TestMCSaveTraceReplay ./cmd/amalgam-cli
func TestMCSaveTraceReplay(t *testing.T) {
	data.Mutant = "commit-f-1"
	defer func() { data.Mutant = "" }()
	path := filepath.Join(t.TempDir(), "trace.json")
	out, _, err := runMC(t, "--output", "json", "mc", "run", "normal", "--quiet", "--save-trace", path)
	if exitCode(err) != exitViolation {
		t.Fatalf("run: %v (status %d, want %d)", err, exitCode(err), exitViolation)
	}
	var run mcSummary
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	v := run.Violation
	if run.Result != "violation" || v == nil || !strings.Contains(v.Predicate, "3.4.1") || v.TraceFile != path || v.TraceLength < 1 {
		t.Fatalf("run: %s", out)
	}
	tf, err := mc.LoadTrace(path)
	if err != nil || tf.Scenario != "normal" || tf.Predicate != v.Predicate || len(tf.Events) != v.TraceLength {
		t.Fatalf("saved trace: %v %+v", err, tf)
	}

	out, _, err = runMC(t, "--output", "json", "mc", "replay", path)
	if err != nil {
		t.Fatal(err)
	}
	var rp mcSummary
	if err := json.Unmarshal([]byte(out), &rp); err != nil || rp.Result != "violation" || rp.Violation == nil ||
		rp.Violation.Predicate != v.Predicate || rp.Violation.TraceLength != v.TraceLength {
		t.Fatalf("replay: %v %s", err, out)
	}
	out, _, err = runMC(t, "mc", "replay", path)
	if err != nil || !strings.Contains(out, "violation of \""+v.Predicate+"\"") {
		t.Fatalf("text replay: %v\n%s", err, out)
	}

	// Unmutated, the trace no longer reaches the violation: replay says
	// so and fails.
	data.Mutant = ""
	if _, _, err := runMC(t, "mc", "replay", path); err == nil || !strings.Contains(err.Error(), "no longer reaches") {
		t.Fatalf("unmutated replay: %v", err)
	}
	data.Mutant = "commit-f-1"

	// The same trace, claimed for another scenario, is refused.
	tf.Scenario = "two-clients"
	other := filepath.Join(t.TempDir(), "other.json")
	if err := tf.Save(other); err != nil {
		t.Fatal(err)
	}
	_, _, err = runMC(t, "mc", "replay", other)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `another initial state than scenario "two-clients"`) {
		t.Fatalf("other scenario: %v", err)
	}
	// A corrupted copy is refused.
	raw, _ := os.ReadFile(path)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, raw[:len(raw)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runMC(t, "mc", "replay", bad); err == nil || !strings.Contains(err.Error(), "corrupted JSON") {
		t.Fatalf("corrupted: %v", err)
	}
}
