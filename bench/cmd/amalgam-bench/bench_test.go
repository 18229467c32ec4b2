package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/bench/harness"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/internal/clitest"
)

// TestBenchJSON runs the smallest experiment end to end through the CLI
// and checks that every system reports positive throughput and latency,
// and that the ratios, targets, CSV and plots are there.
func TestBenchJSON(t *testing.T) {
	for _, tr := range []string{"grpc", "sim"} {
		t.Run(tr, func(t *testing.T) { testBenchJSON(t, tr) })
	}
}

func testBenchJSON(t *testing.T, transport string) {
	dir := t.TempDir()
	csvFile := filepath.Join(dir, "out.csv")
	out, _, err := clitest.RunSplit(newRootCmd(), "storage", "--quick", "--no-progress", "--output", "json", "--csv", csvFile, "--plot", dir, "--transport", transport)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Mode, Durability, Transport string
		Points                      []map[string]any
		Ratios                      []map[string]any
		Targets                     []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Mode != "quick" || rep.Durability != "memory" || rep.Transport != transport {
		t.Errorf("mode %q durability %q transport %q", rep.Mode, rep.Durability, rep.Transport)
	}
	systems := map[string]bool{}
	for _, p := range rep.Points {
		systems[p["system"].(string)] = true
		keys := []string{"ops_per_sec", "mb_per_sec", "p50_ms", "p99_ms", "p999_ms", "cpu_us_per_op", "stored_per_logical_byte"}
		if transport == "sim" {
			keys = append(keys, "net_bytes_per_op") // measured by the simulated network only
		}
		if p["transport"] != transport {
			t.Errorf("%s: transport %v", p["system"], p["transport"])
		}
		for _, k := range keys {
			if v, ok := p[k].(float64); !ok || v <= 0 {
				t.Errorf("%s %s: %s = %v, want > 0", p["experiment"], p["system"], k, p[k])
			}
		}
		if p["durability"] != "memory" {
			t.Errorf("%s: durability %v", p["system"], p["durability"])
		}
	}
	for _, s := range []string{"amalgam", "shardedpaxos", "rspaxos"} {
		if !systems[s] {
			t.Errorf("no point for %s", s)
		}
	}
	baselines := map[string]bool{}
	for _, r := range rep.Ratios {
		baselines[r["baseline"].(string)] = true
		if v, ok := r["throughput"].(float64); !ok || v <= 0 {
			t.Errorf("ratio %v: throughput %v", r["baseline"], r["throughput"])
		}
	}
	if !baselines["shardedpaxos"] || !baselines["rspaxos"] {
		t.Errorf("ratios against %v, want both baselines", baselines)
	}
	if len(rep.Targets) == 0 {
		t.Error("no storage target reported")
	}
	b, err := os.ReadFile(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1+len(rep.Points) {
		t.Errorf("CSV has %d lines, want %d", n, 1+len(rep.Points))
	}
}

func TestBenchBadFlags(t *testing.T) {
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"nope"}, "unknown experiment"},
		{[]string{"storage", "--transport", "udp"}, "--transport must be grpc or sim"},
		{[]string{"storage", "--bandwidth", "10"}, "--bandwidth models links in --transport sim only"},
		{[]string{"storage", "--systems", "amalgam,paxos"}, `--systems: unknown system "paxos"`},
		{[]string{"storage", "--durability", "disk"}, "--durability must be memory or durable"},
		{[]string{"storage", "--durability", "durable", "--transport", "sim"}, "--durability durable needs --transport grpc"},
	})
}

// --systems limits the runs; the report then has no ratios.
func TestBenchSystems(t *testing.T) {
	out, _, err := clitest.RunSplit(newRootCmd(), "storage", "--quick", "--no-progress", "--output", "json", "--systems", "rspaxos")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Points []struct{ System string }
		Ratios []any
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) == 0 || len(rep.Ratios) != 0 {
		t.Fatalf("%d points, %d ratios", len(rep.Points), len(rep.Ratios))
	}
	for _, p := range rep.Points {
		if p.System != "rspaxos" {
			t.Errorf("point for %s", p.System)
		}
	}
}

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
