package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/internal/clitest"
)

// run runs amalgam-cli in-process; its output and errors go to one string.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return clitest.Run(newRootCmd(), args...)
}

func TestLayoutText(t *testing.T) {
	out, err := run(t, "layout", "--machines", "6", "--g", "3", "--f", "2", "--w", "1", "--blocks", "7")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// Summary, header, then 3 stripes (7 blocks rounded up to whole stripes of 3).
	if len(lines) != 5 {
		t.Fatalf("got %d lines, want 5:\n%s", len(lines), out)
	}
	if got := strings.Fields(lines[1]); strings.Join(got, " ") != "stripe blocks m0 m1 m2 m3 m4 m5" {
		t.Errorf("header = %q", lines[1])
	}
	if got := strings.Join(strings.Fields(lines[3]), " "); got != "1 3-5 d1=4 d2=5 p0 p1 w0 d0=3" {
		t.Errorf("stripe 1 row = %q", got)
	}
}

// TestLayoutSummary: past one rotation, text shows n stripes and how to
// find the rest; --all shows every stripe.
func TestLayoutSummary(t *testing.T) {
	out, err := run(t, "layout", "--machines", "5", "--blocks", "1024")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+1+5+2 || !strings.HasPrefix(lines[7], "stripes 5-341 repeat this pattern") {
		t.Fatalf("want summary, header, 5 stripes and a 2-line note:\n%s", out)
	}
	out, err = run(t, "layout", "--machines", "5", "--blocks", "1024", "--all")
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Join(strings.Fields(lines[len(lines)-1]), " "); len(lines) != 2+342 || got != "341 1023-1025 d1=1024 d2=1025 p0 p1 d0=1023" {
		t.Fatalf("--all: %d lines, last %q", len(lines), got)
	}
}

func TestLayoutJSON(t *testing.T) {
	out, err := run(t, "--output", "json", "layout", "--machines", "5", "--blocks", "15")
	if err != nil {
		t.Fatal(err)
	}
	var doc layoutDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	if doc.Stripes != 5 || len(doc.Rows) != 5 || doc.Blocks != 15 {
		t.Fatalf("got %d stripes, %d rows, %d blocks; want 5, 5, 15", doc.Stripes, len(doc.Rows), doc.Blocks)
	}
	if r := doc.Rows[4]; len(r.Blocks) != 3 || r.Blocks[0] != 12 || r.Roles[1] != "d0=12" {
		t.Errorf("stripe 4: %+v", r)
	}
	// Every machine plays every role exactly once over n consecutive stripes.
	for m := 0; m < doc.Machines; m++ {
		seen := map[string]bool{}
		for _, r := range doc.Rows {
			seen[r.Roles[m]] = true
		}
		if len(seen) != 5 {
			t.Errorf("machine %d plays roles %v over 5 stripes, want 5 distinct", m, seen)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, args := range [][]string{
		{"layout", "--machines", "4"},
		{"layout", "--g", "0"},
		{"layout", "--blocks", "0"},
		{"--output", "yaml", "version"},
		{"--timeout", "0s", "version"},
		{"no-such-command"},
	} {
		if _, err := run(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error spans several lines: %q", args, err)
		}
	}
}

func TestClusterFromEnv(t *testing.T) {
	t.Setenv("AMALGAM_CLUSTER", "10.0.0.1:9000")
	cmd := newRootCmd()
	if got := cmd.PersistentFlags().Lookup("cluster").DefValue; got != "10.0.0.1:9000" {
		t.Errorf("--cluster default = %q, want the AMALGAM_CLUSTER value", got)
	}
}
