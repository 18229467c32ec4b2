package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/runtime"
)

func TestMCOnline(t *testing.T) {
	l := erasure.Layout{N: 3, G: 2, F: 1, W: 0, Stripes: 2, BlockSize: 8}
	lc, err := runtime.StartLocal(runtime.LocalOptions{Layout: l, Durability: "memory", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	dir := t.TempDir()
	out, _, err := runMC(t, "--cluster", lc.EntryAddr, "mc", "online", "--cuts", "2", "--every", "200ms", "--max-states", "200", "--dir", dir)
	if err != nil {
		t.Fatalf("mc online: %v\n%s", err, out)
	}
	// An idle cluster gives the same cut again: searched once.
	if (!strings.Contains(out, "2 cuts searched") && !strings.Contains(out, "1 cuts searched (1 states), 1 the same")) || !strings.Contains(out, "0 violations predicted") {
		t.Fatalf("mc online output:\n%s", out)
	}
	out, _, err = runMC(t, "--cluster", lc.EntryAddr, "--output", "json", "mc", "online", "--cuts", "1", "--every", "200ms", "--max-states", "200", "--dir", dir)
	var sum onlineSummary
	if err != nil || json.Unmarshal([]byte(out), &sum) != nil || sum.Cuts != 1 || sum.States == 0 || sum.Predicted == nil || len(sum.Predicted) != 0 {
		t.Fatalf("mc online --output json: %v\n%s", err, out)
	}
	out, _, err = runMC(t, "--cluster", lc.EntryAddr, "mc", "online", "--cuts", "1", "--every", "200ms", "--max-states", "200", "--dir", dir, "--steer", "--steer-for", "2s")
	if err != nil || !strings.Contains(out, "steering: 0 filters installed, 0 predictions not steered") {
		t.Fatalf("mc online --steer: %v\n%s", err, out)
	}
	out, _, err = runMC(t, "--cluster", lc.EntryAddr, "mc", "online", "steer", "--from", "parity/1", "--to", "data/0", "--kind", "stream", "--for", "1s", "--max-states", "200")
	if err != nil || !strings.Contains(out, "installed for 1s: pause the stream from parity/1 to data/0") {
		t.Fatalf("mc online steer --kind stream: %v\n%s", err, out)
	}
	if _, _, err := runMC(t, "--cluster", lc.EntryAddr, "mc", "online", "steer", "--from", "parity/1", "--to", "data/0", "--kind", "timer:retryRebuild", "--for", "1s", "--max-states", "200"); err == nil || !strings.Contains(err.Error(), "one node as from and to") {
		t.Fatalf("a timer filter between two nodes: %v", err)
	}
	out, _, err = runMC(t, "--cluster", lc.EntryAddr, "mc", "online", "steer", "--from", "data/0", "--to", "data/0", "--kind", "check:PrepareOK", "--for", "1s", "--max-states", "200")
	if err != nil || !strings.Contains(out, "installed for 1s: check data/0's PrepareOK steps") {
		t.Fatalf("mc online steer --kind check:PrepareOK: %v\n%s", err, out)
	}
	if _, _, err := runMC(t, "--cluster", lc.EntryAddr, "mc", "online", "steer", "--from", "data/0", "--to", "data/0", "--kind", "check:Prepare", "--for", "1s", "--max-states", "200"); err == nil || !strings.Contains(err.Error(), "checks [PrepareOK], not Prepare") {
		t.Fatalf("a check filter of a kind the check does not check: %v", err)
	}
	out, _, err = runMC(t, "--cluster", lc.EntryAddr, "mc", "online", "steer", "--from", "data/0", "--to", "parity/1", "--kind", "SnapshotData", "--for", "1m", "--max-states", "200")
	if err != nil || !strings.Contains(out, "installed for 1m0s: drop SnapshotData from data/0 to parity/1") {
		t.Fatalf("mc online steer: %v\n%s", err, out)
	}
	if _, _, err := runMC(t, "--cluster", lc.EntryAddr, "mc", "online", "steer", "--from", "data/0"); err == nil || !strings.Contains(err.Error(), "are required") {
		t.Fatalf("steer without --to and --kind: %v", err)
	}
	if _, _, err := runMC(t, "mc", "online", "replay", "trace.json"); err == nil || !strings.Contains(err.Error(), "--snapshot is required") {
		t.Fatalf("replay without --snapshot: %v", err)
	}
}
