package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/check"
	"github.com/amalgam-store/amalgam/check/baselines"
	"github.com/amalgam-store/amalgam/internal/clitest"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/workload"
)

// runMC runs the CLI in-process with separate stdout and stderr.
func runMC(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return clitest.RunSplit(newRootCmd(), args...)
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
	if os.Getenv("AMALGAM_CLI_TEST_VIOLATION") == "1" {
		mcRegistry = func() *mc.Registry {
			r := check.Registry()
			r.Add(oneReply.MC())
			return r
		}
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
	all := mcScenarios()
	if len(all) != len(check.Scenarios())+len(check.Failover())+len(baselines.Scenarios()) {
		t.Fatalf("%d scenarios offered, want %d of Amalgam, %d of its failure detector and %d of the baselines",
			len(all), len(check.Scenarios()), len(check.Failover()), len(baselines.Scenarios()))
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(all) {
		t.Fatalf("%d lines for %d scenarios:\n%s", len(lines), len(all), out)
	}
	for i, sc := range all {
		if f := strings.Fields(lines[i]); len(f) < 3 || f[0] != sc.Name || f[1] != sc.System {
			t.Errorf("line %d = %q, want scenario %s, system %s and its description", i, lines[i], sc.Name, sc.System)
		}
	}
	for _, name := range []string{"normal", "two-clients", "witness", "txn", "crash-data"} {
		if !strings.Contains(out, name+" ") {
			t.Errorf("scenario %s not listed:\n%s", name, out)
		}
	}
	for _, sc := range baselines.Scenarios() {
		if sc.System != "shardedpaxos" && sc.System != "rspaxos" {
			t.Errorf("baseline scenario %s: system %q", sc.Name, sc.System)
		}
		if !strings.Contains(out, sc.Name+" ") {
			t.Errorf("baseline scenario %s not listed:\n%s", sc.Name, out)
		}
	}

	out, _, err = runMC(t, "--output", "json", "mc", "list")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ Name, System, Doc string }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	if len(list) != len(all) {
		t.Fatalf("json list of %d, want %d: %+v", len(list), len(all), list)
	}
	seen := map[string]bool{}
	for i, e := range list {
		if e.Name != all[i].Name || e.System != all[i].System || e.Doc == "" {
			t.Errorf("json entry %d = %+v, want %s (%s)", i, e, all[i].Name, all[i].System)
		}
		if seen[e.Name] {
			t.Errorf("scenario name %s offered twice", e.Name)
		}
		seen[e.Name] = true
	}
	if list[0].System != "amalgam" || list[len(list)-1].System != baselines.Scenarios()[len(baselines.Scenarios())-1].System {
		t.Errorf("json list: %+v", list)
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
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"mc", "run", "no-such"}, `mc run: unknown scenario "no-such"`},
		{[]string{"mc", "run", "no-such"}, " normal "}, // the list names every system's scenarios
		{[]string{"mc", "run", "no-such"}, " shardedpaxos-normal "},
		{[]string{"mc", "run", "no-such"}, " rspaxos-two-clients]"},
		{[]string{"mc", "run", "shardedpaxos-normal", "--strategy", "bogus"}, "--strategy must be"},
		{[]string{"mc", "run", "normal", "--strategy", "bogus"}, "--strategy must be"},
		{[]string{"mc", "run", "normal", "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"mc", "run", "normal", "--checks", "speed"}, `unknown check "speed"`},
		{[]string{"mc", "replay"}, "accepts 1 arg"},
	})
}

// goalTrace saves the trace of a goal search of scenario normal (the
// shortest path to both replies). Replay reaches no violation, and the
// file claims none.
func goalTrace(t *testing.T) (string, *mc.TraceFile) {
	t.Helper()
	o := check.Normal.Options(mc.BFS)
	o.Goals = []mc.Predicate{mc.ClientsDonePred()}
	r := mc.Search(check.Normal.Init(), o)
	if r.Outcome != mc.GoalFound {
		t.Fatalf("goal search: %s", r.Outcome)
	}
	tf := mc.NewTraceFile(check.Normal.MC(), r)
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

// TestMCRunBaselines searches the baselines' scenarios through the CLI:
// the exhaustive ones end exhausted with as many states as the library's
// own search (check/baselines), whatever the strategy; the others stop at
// their limits without a violation.
func TestMCRunBaselines(t *testing.T) {
	states := map[string]int{}
	for _, sc := range []*mc.Scenario{baselines.ShardedPaxosNormal, baselines.RSPaxosNormal} {
		want := sc.Run(mc.BFS, mc.Options{Workers: 2})
		if want.Outcome != mc.Exhausted {
			t.Fatalf("%s: library BFS %s", sc.Name, want.Outcome)
		}
		out, stderr, err := runMC(t, "--output", "json", "mc", "run", sc.Name, "--strategy", "bfs", "--workers", "2")
		if err != nil {
			t.Fatal(err)
		}
		var sum mcSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		if sum.Scenario != sc.Name || sum.System != sc.System || sum.Strategy != "bfs" || sum.Result != string(mc.Exhausted) ||
			sum.States != want.States || sum.MaxDepth != want.MaxDepth || sum.Violation != nil {
			t.Errorf("%s: %+v, want exhausted after %d states, depth %d", sc.Name, sum, want.States, want.MaxDepth)
		}
		if !strings.Contains(stderr, fmt.Sprintf("mc: states=%d", want.States)) {
			t.Errorf("%s: no final progress line on stderr: %q", sc.Name, stderr)
		}
		states[sc.Name] = want.States
		t.Logf("%s: %d states, depth %d", sc.Name, sum.States, sum.MaxDepth)
	}
	// DFS finds the same states; text output.
	want := states["rspaxos-normal"]
	out, _, err := runMC(t, "mc", "run", "rspaxos-normal", "--strategy", "dfs", "--quiet")
	if err != nil || !strings.Contains(out, "scenario rspaxos-normal, strategy dfs: exhausted") ||
		!strings.Contains(out, fmt.Sprintf("\n%d states,", want)) {
		t.Fatalf("dfs text: %v\n%s", err, out)
	}
	// The other strategies and scenarios, half a second each.
	for _, args := range [][]string{
		{"shardedpaxos-lossy", "--strategy", "random", "--seed", "3", "--max-depth", "40"},
		{"shardedpaxos-two-clients", "--strategy", "guided"},
		{"rspaxos-lossy", "--strategy", "bfs", "--checks", "determinism,clone-hash"},
		{"rspaxos-two-clients", "--strategy", "random", "--seed", "5"},
	} {
		out, _, err := runMC(t, append([]string{"--output", "json", "mc", "run", "--quiet", "--max-time", "500ms", "--workers", "2"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var s mcSummary
		if err := json.Unmarshal([]byte(out), &s); err != nil || s.Scenario != args[0] || s.States < 100 || s.Violation != nil ||
			s.Result != string(mc.TimeLimit) {
			t.Fatalf("%v: %v %+v", args, err, s)
		}
	}
}

// TestMCBaselineTraceReplay saves and replays a baseline's trace through
// the CLI. The baselines have no violation to find, so the test adds an
// invariant to shardedpaxos-normal that fails once client/0 has both its
// replies: mc run finds it, minimizes the trace and saves it, mc replay
// reaches it again, and without the added invariant replay says the trace
// no longer reaches it. The trace is refused for another system's
// scenario, and an Amalgam trace for a baseline's.
func TestMCBaselineTraceReplay(t *testing.T) {
	sc := baselines.ShardedPaxosNormal
	orig := sc.Invariants
	defer func() { sc.Invariants = orig }()
	const pred = "client/0 never finishes (test)"
	sc.Invariants = func() []mc.Predicate {
		return append(orig(), mc.Pred(pred, func(s *mc.State) (bool, string) {
			c := s.Node(msg.ClientAddr(0)).(baselines.Scripted)
			return len(c.Replies()) < len(c.Script()), fmt.Sprintf("client/0 has %d of %d replies", len(c.Replies()), len(c.Script()))
		}))
	}

	path := filepath.Join(t.TempDir(), "sp.json")
	out, _, err := runMC(t, "mc", "run", sc.Name, "--quiet", "--workers", "2", "--save-trace", path)
	if exitCode(err) != exitViolation || !strings.Contains(err.Error(), `violates "`+pred+`"`) {
		t.Fatalf("run: error %v (status %d), want status %d", err, exitCode(err), exitViolation)
	}
	if !strings.Contains(out, "scenario shardedpaxos-normal, strategy bfs: violation") || !strings.Contains(out, `violation of "`+pred+`"`) ||
		!strings.Contains(out, "saved to "+path) || !strings.Contains(out, "client/0: 2/2 replies") || !strings.Contains(out, ", ballot ") {
		t.Fatalf("run:\n%s", out)
	}
	tf, err := mc.LoadTrace(path)
	if err != nil || tf.Scenario != sc.Name || tf.Predicate != pred || len(tf.Events) == 0 {
		t.Fatalf("saved trace: %v %+v", err, tf)
	}
	t.Logf("trace of %d steps:\n%s", len(tf.Events), out)

	out, _, err = runMC(t, "--output", "json", "mc", "replay", path)
	if err != nil {
		t.Fatal(err)
	}
	var rp mcSummary
	if err := json.Unmarshal([]byte(out), &rp); err != nil || rp.Scenario != sc.Name || rp.System != "shardedpaxos" ||
		rp.Result != string(mc.Violation) || rp.Violation == nil || rp.Violation.Predicate != pred || rp.Violation.TraceLength != len(tf.Events) {
		t.Fatalf("replay: %v %s", err, out)
	}
	out, _, err = runMC(t, "mc", "replay", path)
	if err != nil || !strings.Contains(out, "  1. ") || !strings.Contains(out, `violation of "`+pred+`"`) {
		t.Fatalf("text replay: %v\n%s", err, out)
	}

	sc.Invariants = orig
	if _, _, err := runMC(t, "mc", "replay", path); err == nil || !strings.Contains(err.Error(), "no longer reaches") {
		t.Fatalf("replay without the added invariant: %v", err)
	}

	// Another system's scenario, and an Amalgam trace, are refused.
	dir := t.TempDir()
	tf.Scenario = "rspaxos-normal"
	other := filepath.Join(dir, "rs.json")
	if err := tf.Save(other); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runMC(t, "mc", "replay", other); err == nil || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), `another initial state than scenario "rspaxos-normal"`) {
		t.Fatalf("trace for rspaxos-normal: %v", err)
	}
	_, amalgam := goalTrace(t)
	amalgam.Scenario = sc.Name
	renamed := filepath.Join(dir, "amalgam.json")
	if err := amalgam.Save(renamed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runMC(t, "mc", "replay", renamed); err == nil ||
		!strings.Contains(err.Error(), `another initial state than scenario "shardedpaxos-normal"`) {
		t.Fatalf("Amalgam trace for %s: %v", sc.Name, err)
	}
}

// oneReply is scenario normal with an invariant the protocol breaks on
// purpose: client/0 never gets its second reply.
var oneReply = &check.Scenario{
	Name: "test-one-reply", Layout: check.Normal.Layout, Scripts: check.Normal.Scripts,
	Extra: []mc.Predicate{mc.Pred("client/0 has at most one reply", func(s *mc.State) (bool, string) {
		n := len(s.Node("client/0").(*workload.Client).Replies())
		return n <= 1, fmt.Sprintf("client/0 has %d replies", n)
	})},
}

// TestMCRunViolationExit: through main, mc run exits with status 3 on a
// violation and says so in one line on stderr, after the summary (JSON:
// one object, no error object after it) and the trace (text: each step
// with what it sent). A run without a violation exits 0.
func TestMCRunViolationExit(t *testing.T) {
	t.Setenv("AMALGAM_CLI_TEST_VIOLATION", "1")
	code, out, stderr := runBinary(t, "--output", "json", "mc", "run", "test-one-reply", "--quiet", "--workers", "1")
	var sum mcSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Result != "violation" || sum.Violation == nil ||
		sum.Violation.Predicate != "client/0 has at most one reply" {
		t.Fatalf("json: %v\n%s", err, out)
	}
	want := fmt.Sprintf(`amalgam-cli: mc run: scenario test-one-reply violates "client/0 has at most one reply" (trace of %d steps)`+"\n", sum.Violation.TraceLength)
	if code != exitViolation || stderr != want {
		t.Fatalf("json: status %d, stderr %q; want %d, %q", code, stderr, exitViolation, want)
	}

	code, out, stderr = runBinary(t, "mc", "run", "test-one-reply", "--quiet", "--workers", "1")
	if code != exitViolation || stderr != want {
		t.Fatalf("text: status %d, stderr %q", code, stderr)
	}
	for _, s := range []string{"  1. deliver client/0 -> data/0", "     -> stream data/0 -> parity/", "     -> send data/0 -> client/0 "} {
		if !strings.Contains(out, s) {
			t.Errorf("text output lacks %q:\n%s", s, out)
		}
	}

	code, _, stderr = runBinary(t, "mc", "run", "normal", "--quiet", "--workers", "1")
	if code != 0 || stderr != "" {
		t.Fatalf("clean run: status %d, stderr %q", code, stderr)
	}
}
