package main

import (
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
	if !strings.Contains(out, "2 cuts searched") || !strings.Contains(out, "0 violations predicted") {
		t.Fatalf("mc online output:\n%s", out)
	}
	if _, _, err := runMC(t, "mc", "online", "replay", "trace.json"); err == nil || !strings.Contains(err.Error(), "--snapshot is required") {
		t.Fatalf("replay without --snapshot: %v", err)
	}
}
