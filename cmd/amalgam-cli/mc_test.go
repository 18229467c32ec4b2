package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// runMC runs the CLI in-process with separate stdout and stderr.
func runMC(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errb.String(), err
}

// runBinary runs the CLI's main in a child process (this test binary,
// re-executed into TestMainHelper) and returns its exit code and output.
func runBinary(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainHelper$", "--")
	cmd.Args = append(cmd.Args, args...)
	cmd.Env = append(os.Environ(), "AMALGAM_CLI_TEST_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestMainHelper is the child process of runBinary: it runs main with the
// arguments after "--".
func TestMainHelper(t *testing.T) {
	if os.Getenv("AMALGAM_CLI_TEST_MAIN") != "1" {
		t.Skip("child process of runBinary only")
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Args = append([]string{"amalgam-cli"}, os.Args[i+1:]...)
			break
		}
	}
	main()
	os.Exit(0)
}

func TestMCList(t *testing.T) {
	out, _, err := runMC(t, "mc", "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(mc.Scenarios()) {
		t.Fatalf("%d lines for %d scenarios:\n%s", len(lines), len(mc.Scenarios()), out)
	}
	for i, sc := range mc.Scenarios() {
		if f := strings.Fields(lines[i]); len(f) < 2 || f[0] != sc.Name {
			t.Errorf("line %d = %q, want scenario %s and its description", i, lines[i], sc.Name)
		}
	}
	for _, name := range []string{"normal", "two-clients", "witness", "txn", "crash-data"} {
		if !strings.Contains(out, name+" ") {
			t.Errorf("scenario %s not listed:\n%s", name, out)
		}
	}

	out, _, err = runMC(t, "--output", "json", "mc", "list")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ Name, Doc string }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	if len(list) != len(mc.Scenarios()) || list[0].Name != mc.Scenarios()[0].Name || list[0].Doc == "" {
		t.Fatalf("json list: %+v", list)
	}
}

// TestMCRunJSON checks the summary object of mc run --output json.
func TestMCRunJSON(t *testing.T) {
	out, stderr, err := runMC(t, "--output", "json", "mc", "run", "normal", "--workers", "2")
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("stdout is not one JSON object (%v):\n%s", err, out)
	}
	for _, k := range []string{"scenario", "strategy", "states", "max_depth", "elapsed_s", "states_per_s", "result"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q: %s", k, out)
		}
	}
	if sum["scenario"] != "normal" || sum["strategy"] != "bfs" || sum["result"] != "exhausted" ||
		sum["states"] != float64(69) || sum["max_depth"].(float64) < 16 || sum["elapsed_s"].(float64) <= 0 {
		t.Errorf("summary %s", out)
	}
	if sum["violation"] != nil {
		t.Errorf("violation in a clean run: %s", out)
	}
	// Progress lines go to stderr, never into the JSON.
	if !strings.Contains(stderr, "mc: states=69") {
		t.Errorf("no final progress line on stderr: %q", stderr)
	}

	// Other strategies and the self-checks give the same summary shape.
	for _, args := range [][]string{
		{"--strategy", "dfs"},
		{"--strategy", "random", "--seed", "3", "--max-depth", "30", "--max-time", "1s"},
		{"--strategy", "guided"},
		{"--checks", "determinism,clone-hash,idempotence"},
	} {
		out, _, err := runMC(t, append([]string{"--output", "json", "mc", "run", "normal", "--quiet"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var s mcSummary
		if err := json.Unmarshal([]byte(out), &s); err != nil || s.Scenario != "normal" || s.States < 1 || s.Violation != nil {
			t.Fatalf("%v: %v %+v", args, err, s)
		}
	}

	// Text output.
	out, _, err = runMC(t, "mc", "run", "txn", "--quiet")
	if err != nil || !strings.Contains(out, "scenario txn, strategy bfs: exhausted") || !strings.Contains(out, "57 states") {
		t.Fatalf("text: %v\n%s", err, out)
	}
}

func TestMCRunErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mc", "run", "no-such"}, `mc run: unknown scenario "no-such"`},
		{[]string{"mc", "run", "normal", "--strategy", "bogus"}, "--strategy must be"},
		{[]string{"mc", "run", "normal", "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"mc", "run", "normal", "--checks", "speed"}, `unknown check "speed"`},
		{[]string{"mc", "replay"}, "accepts 1 arg"},
	} {
		_, _, err := runMC(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line with %q", c.args, err, c.want)
		}
	}
}

// goalTrace saves the trace of a goal search of scenario normal (the
// shortest path to both replies). Replay reaches no violation, and the
// file claims none.
func goalTrace(t *testing.T) (string, *mc.TraceFile) {
	t.Helper()
	o := mc.Normal.Options(mc.BFS)
	o.Goals = []mc.Predicate{mc.ClientsDonePred()}
	r := mc.Search(mc.Normal.Init(), o)
	if r.Outcome != mc.GoalFound {
		t.Fatalf("goal search: %s", r.Outcome)
	}
	tf := mc.NewTraceFile(mc.Normal, r)
	tf.Predicate, tf.Explanation = "", ""
	path := filepath.Join(t.TempDir(), "normal.json")
	if err := tf.Save(path); err != nil {
		t.Fatal(err)
	}
	return path, tf
}

func TestMCReplay(t *testing.T) {
	path, tf := goalTrace(t)
	out, _, err := runMC(t, "--output", "json", "mc", "replay", path)
	if err != nil {
		t.Fatal(err)
	}
	var sum mcSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Scenario != "normal" || sum.Strategy != "replay" ||
		sum.Result != "no_violation" || sum.MaxDepth != len(tf.Events) {
		t.Fatalf("%v %+v", err, sum)
	}
	out, _, err = runMC(t, "mc", "replay", path)
	if err != nil || !strings.Contains(out, "  1. deliver client/0 -> data/0") {
		t.Fatalf("text replay: %v\n%s", err, out)
	}
}

// TestMCReplayRefuses runs the real main in a child process: a corrupted
// file, a file of another version, a trace of another scenario and a
// trace naming an unknown scenario exit with status 1 and one line on
// stderr.
func TestMCReplayRefuses(t *testing.T) {
	path, tf := goalTrace(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := *tf
	other.Scenario = "witness"
	otherPath := filepath.Join(dir, "other.json")
	if err := other.Save(otherPath); err != nil {
		t.Fatal(err)
	}
	unknown := *tf
	unknown.Scenario = "no-such-scenario"
	unknownPath := filepath.Join(dir, "unknown.json")
	if err := unknown.Save(unknownPath); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file, want string
	}{
		{write("truncated.json", raw[:len(raw)/2]), "corrupted JSON"},
		{write("garbage.json", []byte("\x00\x01not json")), "corrupted JSON"},
		{write("v9.json", bytes.Replace(raw, []byte(`"version": 1`), []byte(`"version": 9`), 1)), "trace file version 9"},
		{otherPath, `another initial state than scenario "witness"`},
		{unknownPath, `unknown scenario "no-such-scenario"`},
		{filepath.Join(dir, "missing.json"), "no such file"},
	} {
		code, stdout, stderr := runBinary(t, "mc", "replay", c.file)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "amalgam-cli: mc replay: ") ||
			!strings.Contains(lines[0], c.want) {
			t.Errorf("%s: exit %d, stderr %q (want one line with %q), stdout %q", filepath.Base(c.file), code, stderr, c.want, stdout)
		}
	}
	// The valid trace exits 0 through the same path.
	if code, _, stderr := runBinary(t, "mc", "replay", path); code != 0 {
		t.Errorf("valid trace: exit %d, %s", code, stderr)
	}
}
