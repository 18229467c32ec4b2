//go:build !mutants

package main

import (
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/check"
)

// Without the mutants tag, --mutant is refused in one line and mc list
// --mutants still lists every mutant, saying the binary carries none.
func TestMCMutantNeedsTag(t *testing.T) {
	for _, args := range [][]string{
		{"mc", "run", "normal", "--quiet", "--mutant", "commit-f-1"},
		{"mc", "replay", "/nonexistent.json", "--mutant", "commit-f-1"},
		{"--cluster", "127.0.0.1:1", "mc", "online", "--mutant", "commit-f-1"},
		{"mc", "online", "replay", "--snapshot", "/nonexistent.gob", "/nonexistent.json", "--mutant", "commit-f-1"},
	} {
		_, _, err := runMC(t, args...)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "-tags mutants") {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if _, _, err := runMC(t, "mc", "run", "normal", "--quiet", "--mutant", "no-such"); err == nil || !strings.Contains(err.Error(), "unknown mutant") {
		t.Fatalf("unknown mutant: %v", err)
	}
	out, _, err := runMC(t, "mc", "list", "--mutants")
	if err != nil || !strings.Contains(out, "build with -tags mutants") {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, m := range check.Mutants() {
		if !strings.Contains(out, m.Name+" ") || !strings.Contains(out, m.Scenario) {
			t.Errorf("mc list --mutants misses %s on %s", m.Name, m.Scenario)
		}
	}
}
