package harness

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
)

// Each run lasts at least 300 ms and until 20 operations completed
// (MinOps), so a busy machine makes it longer, not empty.
func TestRunEachSystem(t *testing.T) {
	l := erasure.Layout{N: 7, G: 5, F: 2, Stripes: 20, BlockSize: 4096}
	for _, sys := range Systems {
		for _, w := range []Workload{{Write: 1}, {RMW: 1}, {Read: 1}, {Write: 1, Keys: "seq"}} {
			p, err := Run(RunSpec{System: sys, Layout: l, Workload: w, Clients: 4, Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond, MinOps: 20,
				Net: NetOptions{Bandwidth: 50e6}})
			if err != nil {
				t.Fatal(err)
			}
			if p.Ops == 0 || p.OpsPerSec <= 0 || p.P50ms <= 0 || p.Errors != 0 {
				t.Errorf("%s %s: %d ops, %.0f ops/s, p50 %.2f ms, %d errors", sys, w, p.Ops, p.OpsPerSec, p.P50ms, p.Errors)
			}
			if w.Keys == "seq" && p.StoredPerLogical <= 1 {
				t.Errorf("%s: stored/logical %.3f, want > 1", sys, p.StoredPerLogical)
			}
			t.Logf("%s %s %s: %.0f ops/s p50 %.2fms p99 %.2fms cpu %.0fus net %.0fB stored %.3f errs %d", sys, w, w.Keys, p.OpsPerSec, p.P50ms, p.P99ms, p.CPUus, p.NetBytesPerOp, p.StoredPerLogical, p.Errors)
		}
	}
}

// The same workloads on the production runtime (gRPC on loopback).
func TestRunEachSystemGRPC(t *testing.T) {
	l := erasure.Layout{N: 7, G: 5, F: 2, Stripes: 20, BlockSize: 4096}
	for _, sys := range Systems {
		for _, w := range []Workload{{Write: 1}, {RMW: 1}, {Read: 1}, {Write: 1, Keys: "seq"}} {
			p, err := Run(RunSpec{System: sys, Layout: l, Workload: w, Clients: 4, Warmup: 100 * time.Millisecond,
				Duration: 300 * time.Millisecond, MinOps: 20, Transport: TransportGRPC})
			if err != nil {
				t.Fatal(err)
			}
			if p.Ops == 0 || p.OpsPerSec <= 0 || p.P50ms <= 0 || p.Errors != 0 || p.Transport != TransportGRPC {
				t.Errorf("%s %s: %d ops, %.0f ops/s, p50 %.2f ms, %d errors, transport %q", sys, w, p.Ops, p.OpsPerSec, p.P50ms, p.Errors, p.Transport)
			}
			if w.Keys == "seq" && p.StoredPerLogical <= 1 {
				t.Errorf("%s: stored/logical %.3f, want > 1", sys, p.StoredPerLogical)
			}
			t.Logf("%s %s %s: %.0f ops/s p50 %.2fms p99 %.2fms cpu %.0fus stored %.3f", sys, w, w.Keys, p.OpsPerSec, p.P50ms, p.P99ms, p.CPUus, p.StoredPerLogical)
		}
	}
}

// Durable runs: every system syncs its stores in a temporary directory,
// which the run removes; the simulated links refuse durability.
func TestRunEachSystemDurable(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	l := erasure.Layout{N: 7, G: 5, F: 2, Stripes: 20, BlockSize: 4096}
	for _, sys := range Systems {
		p, err := Run(RunSpec{System: sys, Layout: l, Workload: Workload{Write: 1}, Clients: 4, Warmup: 100 * time.Millisecond,
			Duration: 300 * time.Millisecond, MinOps: 20, Transport: TransportGRPC, Durability: "durable"})
		if err != nil {
			t.Fatal(err)
		}
		if p.Ops == 0 || p.Errors != 0 || p.Durability != "durable" || p.SyncsPerOp <= 0 || p.DiskPerLogical < 1 {
			t.Errorf("%s: %d ops, %d errors, durability %q, %.2f syncs/op, %.2f disk B/B", sys, p.Ops, p.Errors, p.Durability, p.SyncsPerOp, p.DiskPerLogical)
		}
		left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "amalgam-bench-*"))
		if len(left) > 0 {
			t.Errorf("%s: stores left behind: %v", sys, left)
		}
	}
	_, err := Run(RunSpec{System: Amalgam, Layout: l, Workload: Workload{Write: 1}, Clients: 1, Durability: "durable"})
	if err == nil {
		t.Error("a durable run over the simulated links was accepted")
	}
}
