package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/amalgam-store/amalgam/bench/harness"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/internal/clitest"
)

var recoverySmoke = e2etest.NewOptIn("recovery-smoke", "run TestRecoverySmoke: amalgam-bench recovery on a small durable cluster of separate processes (about a minute)")

// TestRecoveryFlags checks that bad command lines are refused with one
// line naming the flag, before anything is built.
func TestRecoveryFlags(t *testing.T) {
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"recovery", "--output", "xml"}, "--output must be text or json"},
		{[]string{"recovery", "--n", "4"}, "--g + --f <= --n"},
		{[]string{"recovery", "--kill-after", "2m"}, "--kill-after (2m0s) must be before the end of the load"},
		{[]string{"recovery", "--victim", "6"}, "--victim must be a machine 0..5"},
		{[]string{"recovery", "--clients", "0"}, "--clients must be at least 1"},
		{[]string{"recovery", "--mib-per-machine", "-1"}, "--mib-per-machine must be positive"},
		{[]string{"recovery", "--bucket", "0s"}, "--bucket must be positive"},
	})
}

// TestRecoverySmoke (-recovery-smoke) runs the real command: the report
// must hold the kill and, in order, whatever events followed it before the
// load ended, buckets covering the whole load whose writes add up to the
// phases', and both plots.
func TestRecoverySmoke(t *testing.T) {
	recoverySmoke.Require(t)
	dir := t.TempDir()
	out, _, err := clitest.RunSplit(newRootCmd(), "recovery", "--no-progress", "--output", "json", "--mib-per-machine", "0.25",
		"--clients", "4", "--kill-after", "3s", "--duration", "40s", "--bucket", "500ms", "--plot", dir)
	if err != nil {
		t.Fatal(err)
	}
	var r harness.RecoveryReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	order := []string{harness.EventKill, harness.EventMoved, harness.EventReplaced, harness.EventHealthy}
	if len(r.Events) == 0 || len(r.Events) > len(order) {
		t.Fatalf("events %+v", r.Events)
	}
	for i, e := range r.Events {
		if e.Name != order[i] || i > 0 && e.AtS < r.Events[i-1].AtS {
			t.Errorf("event %d: %+v, want %s after %+v", i, e, order[i], r.Events[:i])
		}
	}
	t.Logf("events %+v; rebuild %.2f s", r.Events, r.RebuildSeconds)
	if len(r.Buckets) != 80 {
		t.Errorf("%d buckets of 500ms over 40s, want 80", len(r.Buckets))
	}
	var inBuckets, inPhases int64
	for _, b := range r.Buckets {
		inBuckets += b.Ops
	}
	for _, p := range r.Phases {
		inPhases += p.Ops
	}
	if inBuckets != inPhases || len(r.Phases) != len(r.Events)+1 {
		t.Errorf("%d writes in buckets, %d in %d phases", inBuckets, inPhases, len(r.Phases))
	}
	for _, f := range []string{"recovery-4KiB.svg", "recovery-4KiB-p99.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
