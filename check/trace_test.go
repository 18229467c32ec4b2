package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/workload"
)

// oneReply is Normal with an invariant the protocol breaks on purpose:
// client/0 never gets its second reply.
var oneReply = &Scenario{
	Name: "test-one-reply", Layout: Normal.Layout, Scripts: Normal.Scripts,
	Settings: mc.Settings{MaxTimerFires: 1},
	Extra: []mc.Predicate{mc.Pred("client/0 has at most one reply", func(s *mc.State) (bool, string) {
		n := len(s.Node("client/0").(*workload.Client).Replies())
		return n <= 1, ""
	})},
}

func TestTraceSaveReplay(t *testing.T) {
	r := oneReply.Run(mc.BFS, mc.Options{Workers: 2})
	if r.Outcome != mc.Violation || r.Predicate != "client/0 has at most one reply" {
		t.Fatalf("%s %s", r.Outcome, r.Predicate)
	}
	n := len(r.Trace)
	mc.Explain(oneReply.MC(), r)
	if len(r.Trace) > n {
		t.Fatalf("explained trace grew from %d to %d", n, len(r.Trace))
	}
	var b strings.Builder
	oneReply.MC().PrintTrace(&b, r.Trace)
	t.Logf("trace:\n%s", b.String())

	path := filepath.Join(t.TempDir(), "trace.json")
	if err := mc.NewTraceFile(oneReply.MC(), r).Save(path); err != nil {
		t.Fatal(err)
	}
	tf, err := mc.LoadTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := mc.Replay(oneReply.MC(), tf)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Predicate != r.Predicate || len(rp.Events) != len(r.Trace) {
		t.Fatalf("replay ends with %q", rp.Predicate)
	}

	// A trace of another scenario is refused.
	if _, err := mc.Replay(Normal.MC(), tf); err == nil || !strings.Contains(err.Error(), `trace is for scenario "test-one-reply", not "normal"`) {
		t.Fatalf("other scenario: %v", err)
	}
	// Corrupted files are refused with a clear message.
	raw, _ := os.ReadFile(path)
	if _, err := mc.ParseTrace(raw[:len(raw)/2]); err == nil || !strings.Contains(err.Error(), "corrupted JSON") {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := mc.ParseTrace([]byte(strings.Replace(string(raw), `"version": 1`, `"version": 7`, 1))); err == nil || !strings.Contains(err.Error(), "version 7") {
		t.Fatalf("version: %v", err)
	}
	bad := *tf
	bad.Events = append([]mc.TraceEvent(nil), tf.Events...)
	bad.Events[0].Msg = "12345"
	if _, err := mc.Replay(oneReply.MC(), &bad); err == nil || !strings.Contains(err.Error(), "does not replay at step 1") {
		t.Fatalf("altered event: %v", err)
	}
}

// TestReplayRefusesRenamedTrace: a trace whose scenario name was changed
// to a scenario with another initial state is refused, even where its
// events would also apply there.
func TestReplayRefusesRenamedTrace(t *testing.T) {
	r := oneReply.Run(mc.BFS, mc.Options{Workers: 1})
	tf := mc.NewTraceFile(oneReply.MC(), r)
	if tf.Initial == "" {
		t.Fatal("no initial-state fingerprint in the trace")
	}
	renamed := *tf
	renamed.Scenario = TwoClients.Name
	if _, err := mc.Replay(TwoClients.MC(), &renamed); err == nil || !strings.Contains(err.Error(), "another initial state") {
		t.Fatalf("renamed trace: %v", err)
	}
	// Normal has the same initial state as test-one-reply: allowed.
	renamed.Scenario = Normal.Name
	if _, err := mc.Replay(Normal.MC(), &renamed); err != nil {
		t.Fatalf("same initial state: %v", err)
	}
	// Traces without the field (older files) replay unchecked.
	renamed.Initial = ""
	if _, err := mc.Replay(Normal.MC(), &renamed); err != nil {
		t.Fatalf("no initial field: %v", err)
	}
}

// TestTraceTextStable: the printed trace of a violation is the same text
// in two independent searches (no pointer addresses, nothing cut short),
// and each step lists what its handler sent; the saved trace carries the
// same lists.
func TestTraceTextStable(t *testing.T) {
	print := func() (string, *mc.TraceFile) {
		r := oneReply.Run(mc.BFS, mc.Options{Workers: 1})
		mc.Explain(oneReply.MC(), r)
		var b strings.Builder
		oneReply.MC().PrintTrace(&b, r.Trace)
		return b.String(), mc.NewTraceFile(oneReply.MC(), r)
	}
	a, tf := print()
	b, _ := print()
	if a != b {
		t.Fatalf("two runs print different traces:\n%s\n---\n%s", a, b)
	}
	if m := regexp.MustCompile(`0x[0-9a-f]{6,}`).FindString(a); m != "" {
		t.Fatalf("trace prints an address %s:\n%s", m, a)
	}
	// The PREPARE carries the whole reply it will answer with: its
	// description runs to the end, past 160 characters.
	prep := regexp.MustCompile(`(?m)^     -> stream data/0 -> parity/3 (Prepare\{.*\})$`).FindStringSubmatch(a)
	if prep == nil || len(prep[1]) <= 160 || !strings.Contains(prep[1], `Err:""}}`) {
		t.Fatalf("no whole PREPARE among the first step's sends:\n%s", a)
	}
	if !strings.Contains(a, "     -> send data/0 -> client/0 Reply{") || !strings.Contains(a, "     -> timer retry{") {
		t.Fatalf("trace lacks a reply or a timer among the sends:\n%s", a)
	}
	if len(tf.Events) == 0 || len(tf.Events[0].Sent) != 2 || !strings.HasPrefix(tf.Events[0].Sent[0], "stream data/0 -> parity/3 Prepare{") {
		t.Fatalf("saved trace's first step sent %q", tf.Events[0].Sent)
	}
}
