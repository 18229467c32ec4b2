package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMCRunLMC: --strategy lmc runs a scenario and prints its counts; a
// violation it finds is saved as an ordinary trace that mc replay
// replays under global semantics.
func TestMCRunLMC(t *testing.T) {
	out, _, err := runMC(t, "mc", "run", "normal", "--strategy", "lmc", "--quiet")
	if err != nil || !strings.Contains(out, "scenario normal, strategy lmc: exhausted") ||
		!strings.Contains(out, "system states built") || !strings.Contains(out, "  data/0: ") {
		t.Fatalf("%v\n%s", err, out)
	}

	t.Setenv("AMALGAM_CLI_TEST_VIOLATION", "1")
	tf := filepath.Join(t.TempDir(), "t.json")
	code, out, _ := runBinary(t, "mc", "run", "test-one-reply", "--strategy", "lmc", "--quiet", "--save-trace", tf)
	if code != exitViolation || !strings.Contains(out, "strategy lmc: violation") {
		t.Fatalf("status %d:\n%s", code, out)
	}
	code, out, stderr := runBinary(t, "mc", "replay", tf)
	if code != 0 || !strings.Contains(out, "strategy replay: violation") || !strings.Contains(out, `violation of "client/0 has at most one reply"`) {
		t.Fatalf("replay: status %d, stderr %q:\n%s", code, stderr, out)
	}
}
