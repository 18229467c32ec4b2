package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
)

// TestPartitionScenario explores partition-server to exhaustion (BFS with
// 1 and 2 workers, DFS: no violation, exact count) and shows what a cut
// does: with parity/3 cut off, a PREPARE to it waits on its stream, the
// search's trace to there saves and replays to the same state, and from
// there the client still gets both replies (the stream resumes); with
// data/0 cut off and the client's request lost, the client's retry gets
// it through after the cut heals.
func TestPartitionScenario(t *testing.T) {
	for _, o := range []struct {
		st mc.Strategy
		w  int
	}{{mc.BFS, 1}, {mc.BFS, 2}, {mc.DFS, 1}} {
		r := PartitionServer.Run(o.st, mc.Options{Workers: o.w})
		if r.Outcome != mc.Exhausted || r.States != 8568 {
			t.Errorf("%s with %d workers: %s after %d states, want exhausted after 8568 (%s: %s)",
				o.st, o.w, r.Outcome, r.States, r.Predicate, r.Explanation)
		}
	}

	m := PartitionServer.MC()
	done := mc.Pred("client/0 done", func(s *mc.State) (bool, string) { return clientDone(s), "" })
	for _, c := range []struct {
		name string
		at   func(s *mc.State) bool
	}{
		{"parity/3 cut off with a PREPARE waiting for it", func(s *mc.State) bool {
			a, _ := s.Cut()
			waiting := false
			s.StreamMessages(func(e mc.Envelope) {
				_, p := e.Msg.(msg.Prepare)
				waiting = waiting || p && e.To == msg.ParityAddr(3)
			})
			return a == msg.ParityAddr(3) && waiting
		}},
		{"data/0 cut off, the client's request lost", func(s *mc.State) bool {
			a, _ := s.Cut()
			return a == msg.DataAddr(0) && len(s.Network()) == 0 && s.Used().Fires == 0 &&
				s.Node(msg.DataAddr(0)).(interface{ PendingOps() int }).PendingOps() == 0 && !clientDone(s) && s.Returned() == 0
		}},
	} {
		o := m.Options(mc.BFS)
		o.Goals = []mc.Predicate{mc.Pred(c.name, func(s *mc.State) (bool, string) { return c.at(s), "" })}
		r := mc.Search(m.Init(), o)
		if r.Outcome != mc.GoalFound {
			t.Fatalf("%q not reached: %s", c.name, r.Outcome)
		}
		rp, err := mc.Replay(m, mc.NewTraceFile(m, r))
		if err != nil || rp.Final.Fingerprint() != r.Final.Fingerprint() {
			t.Fatalf("%q: the trace does not replay to the same state: %v", c.name, err)
		}
		o.Goals = []mc.Predicate{done}
		if r2 := mc.Search(r.Final, o); r2.Outcome != mc.GoalFound {
			t.Errorf("client/0 never finishes after %q: %s", c.name, r2.Outcome)
		}
		t.Logf("%q after %d steps", c.name, len(r.Trace))
	}
}
