package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchJSON runs the smallest experiment end to end through the CLI
// and checks that every system reports positive throughput and latency,
// and that the ratios, targets, CSV and plots are there.
func TestBenchJSON(t *testing.T) {
	dir := t.TempDir()
	csvFile := filepath.Join(dir, "out.csv")
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "storage", "--quick", "--no-progress", "--output", "json", "--csv", csvFile, "--plot", dir})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Mode, Durability string
		Points           []map[string]any
		Ratios           []map[string]any
		Targets          []map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.Mode != "quick" || rep.Durability != "memory" {
		t.Errorf("mode %q durability %q", rep.Mode, rep.Durability)
	}
	systems := map[string]bool{}
	for _, p := range rep.Points {
		systems[p["system"].(string)] = true
		for _, k := range []string{"ops_per_sec", "mb_per_sec", "p50_ms", "p99_ms", "p999_ms", "cpu_us_per_op", "net_bytes_per_op", "stored_per_logical_byte"} {
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

func TestBenchUnknownExperiment(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"bench", "nope"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "unknown experiment") {
		t.Fatalf("err = %v", err)
	}
}
