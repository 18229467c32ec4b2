package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
)

// earlyLost holds once client/0 has the reply to its first operation and
// its second request is on its way to data/0, which runs again, restarted
// with the first operation not committed: the commit the reply reported
// was lost with the crash.
var earlyLost = mc.Pred("client/0 has its reply and asks again, data/0 restarted with the operation uncommitted",
	func(s *mc.State) (bool, string) {
		c := s.Node(msg.ClientAddr(0)).(*workload.Client)
		if s.Used().Restarts != 1 || s.Crashed(msg.DataAddr(0)) || len(c.Replies()) == 0 {
			return false, ""
		}
		asks := slices.ContainsFunc(s.Network(), func(e mc.Envelope) bool {
			r, ok := e.Msg.(msg.Request)
			return ok && e.To == msg.DataAddr(0) && r.Seq == 2
		})
		ops := s.Node(msg.DataAddr(0)).(*data.Server).Ops()
		return asks && slices.ContainsFunc(ops, func(o data.OpView) bool { return o.Seq == 1 && !o.Committed }), ""
	})

// TestEarlyScenariosReach shows the early variants reach what they are
// about, and only through the early crash: the client holds the reply of
// an operation that the restarted data server has pending again, and from
// there the client's next operation (restart-data: the read of the
// written block; restart-data-retry: the read after the add;
// restart-data-txn: the read after a transaction across two stripes,
// whose reply left once both had their quorum) still ends,
// the restarted server committing the operation again when the
// PREPARE-OKs come again. The base scenarios never reach it.
func TestEarlyScenariosReach(t *testing.T) {
	for _, sc := range []*Scenario{RestartDataEarly, RestartDataRetryEarly, RestartDataTxnEarly} {
		m := sc.MC()
		o := m.Options(mc.BFS)
		o.Goals = []mc.Predicate{earlyLost}
		r := mc.Search(m.Init(), o)
		if r.Outcome != mc.GoalFound {
			t.Fatalf("%s: %q not reached: %s", sc.Name, earlyLost.Name, r.Outcome)
		}
		if !slices.ContainsFunc(r.Trace, func(e mc.Event) bool { return e.Kind == mc.Crash && e.Env.Msg != nil }) {
			t.Errorf("%s: %q reached without an early crash", sc.Name, earlyLost.Name)
		}
		// The trace, saved and replayed, names the early crash.
		if rp, err := mc.Replay(m, mc.NewTraceFile(m, r)); err != nil || rp.Final.Fingerprint() != r.Final.Fingerprint() {
			t.Errorf("%s: the trace to %q does not replay: %v", sc.Name, earlyLost.Name, err)
		}
		o.Goals = []mc.Predicate{mc.Pred("client/0 done", func(s *mc.State) (bool, string) { return clientDone(s), "" })}
		if r2 := mc.Search(r.Final, o); r2.Outcome != mc.GoalFound {
			t.Errorf("%s: client/0 never finishes after %q: %s", sc.Name, earlyLost.Name, r2.Outcome)
		}
		t.Logf("%s: %q after %d steps", sc.Name, earlyLost.Name, len(r.Trace))
	}
	for _, sc := range []*Scenario{RestartData, RestartDataRetry} {
		m := sc.MC()
		o := m.Options(mc.BFS)
		o.Goals = []mc.Predicate{earlyLost}
		if r := mc.Search(m.Init(), o); r.Outcome != mc.Exhausted {
			t.Errorf("%s (no early replies): %s, want %q unreachable", sc.Name, r.Outcome, earlyLost.Name)
		}
	}
}

// TestEarlyReplaceWalks: the early variants with a replacement, too
// large to exhaust, pass 3000 seeded random walks each (bounded by walks,
// not time); those of restart-replace-data-early reach the early crash
// with the client's next request on its way. (The walks of
// restart-data-replace-parity-early do not reach a snapshot answer that
// left early within these bounds.)
func TestEarlyReplaceWalks(t *testing.T) {
	for _, sc := range []*Scenario{RestartReplaceDataEarly, RestartDataReplaceParityEarly} {
		m := sc.MC()
		o := m.Options(mc.Random)
		o.MaxTime, o.Seed, o.Walks, o.Workers = 0, 1, 3000, 1
		r := mc.Search(m.Init(), o)
		if r.Outcome == mc.Violation {
			t.Fatalf("%s: %s: %s", m.Name, r.Predicate, r.Explanation)
		}
		t.Logf("%s: %s, %d states, depth %d", m.Name, r.Outcome, r.States, r.MaxDepth)
	}
	m := RestartReplaceDataEarly.MC()
	if r := reachByWalks(m, earlyLost); r.Outcome != mc.GoalFound {
		t.Errorf("%s: %q not reached: %s after %d states", m.Name, earlyLost.Name, r.Outcome, r.States)
	}
}

// kindAt selects the handler of messages like m at servers whose address
// starts with prefix.
func kindAt[M node.Message](prefix string) func(node.Addr, node.Message) bool {
	return func(a node.Addr, m node.Message) bool {
		_, ok := m.(M)
		return strings.HasPrefix(string(a), prefix) && ok
	}
}

// TestEarlyReleaseUnsafeFound: the same scenarios and searches find the
// releases that are not safe, the whole batch of a handler leaving before
// it is durable (mc.State.PersistBehindOn): a data server's PREPAREs, a
// parity server's PREPARE-OK, and a data server's COMMITs (its handling of
// a PREPARE-OK released whole: the restarted server has the operation
// pending while a parity server applied its COMMIT, and its stream would
// number a new message as the lost COMMIT). So early replies must leave
// alone, their batch's stream messages and acknowledgements waiting.
func TestEarlyReleaseUnsafeFound(t *testing.T) {
	defer func() { releaseEarly = nil }()
	for _, c := range []struct {
		what string
		sc   *Scenario
		sel  func(node.Addr, node.Message) bool
		pred string
	}{
		{"a data server's PREPAREs (prepare-before-durable)", RestartDataTwo, kindAt[msg.Request]("data/"), "parity"},
		{"a parity server's PREPARE-OK (ack-before-durable)", RestartParity, kindAt[msg.Prepare]("parity/"), "parity"},
		{"a data server's COMMITs with its reply", RestartData, kindAt[msg.PrepareOK]("data/"), "3.4.1"},
		{"a data server's COMMITs with its reply", RestartDataTwo, kindAt[msg.PrepareOK]("data/"), "3.4.1"},
	} {
		releaseEarly = c.sel
		r := c.sc.Run(mc.BFS, mc.Options{Workers: 1})
		if r.Outcome != mc.Violation || !strings.Contains(r.Predicate, c.pred) {
			t.Errorf("%s released before durable, %s: %s (%s), want a violation of %s",
				c.what, c.sc.Name, r.Outcome, r.Predicate, c.pred)
			continue
		}
		t.Logf("%s released before durable, %s: %s after %d states, %d steps: %s", c.what, c.sc.Name,
			r.Predicate, r.States, len(r.Trace), r.Explanation)
	}
}
