package check

import (
	"testing"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/workload"
)

// TestCrashScenariosReach shows that each crash scenario reaches the
// situation it is about, so that passing its invariants means something.
func TestCrashScenariosReach(t *testing.T) {
	crashed := func(s *mc.State, a node.Addr) bool { return s.Crashed(a) }
	replies := func(s *mc.State, c int) int { return len(s.Node(msg.ClientAddr(c)).(*workload.Client).Replies()) }
	// acked reports whether the parity server at a took shard 0's op 1.
	acked := func(s *mc.State, a node.Addr) bool {
		p := s.Node(a).(*parity.Server)
		for _, h := range p.Prepares() {
			if h.P.Shard == 0 && h.P.OpNum == 1 {
				return true
			}
		}
		return p.OpNum(0) >= 1
	}
	cases := []struct {
		sc   *Scenario
		goal mc.Predicate
	}{
		// The write commits although a parity server crashed without
		// ever holding its PREPARE: the witness made the quorum.
		{CrashParityWitness, mc.Pred("write committed without a crashed parity server", func(s *mc.State) (bool, string) {
			for _, a := range []node.Addr{msg.ParityAddr(3), msg.ParityAddr(4)} {
				if crashed(s, a) && !acked(s, a) && replies(s, 0) == 2 {
					return true, string(a) + " crashed before the write's PREPARE"
				}
			}
			return false, ""
		})},
		// The witness crashed and both clients finished with the parity
		// servers alone.
		{CrashBackupWitness, mc.Pred("done without the witness", func(s *mc.State) (bool, string) {
			return crashed(s, msg.WitnessAddr(5)) && replies(s, 0) == 2 && replies(s, 1) == 1, ""
		})},
		// Without a witness, a parity crash before the PREPARE leaves the
		// client waiting for a replacement.
		{CrashParityNoWitness, mc.Not(DoneWhenQuiet(msg.ClientAddr(0)))},
		// data/0 crashed between PREPARE and COMMIT: a parity server holds
		// its PREPARE, unapplied, forever; client 1 still finished.
		{CrashData, mc.Pred("data/0 crashed mid-commit, client 1 done", func(s *mc.State) (bool, string) {
			if !crashed(s, msg.DataAddr(0)) || replies(s, 1) != 2 || !s.Quiet() {
				return false, ""
			}
			for _, a := range []node.Addr{msg.ParityAddr(3), msg.ParityAddr(4)} {
				for _, h := range s.Node(a).(*parity.Server).Prepares() {
					if h.P.Shard == 0 && !h.Applied {
						return true, ""
					}
				}
			}
			return false, ""
		})},
		// data/0 crashed with one stripe of the transaction acknowledged
		// and the other not.
		{CrashDataTxn, mc.Pred("data/0 crashed with the txn half acknowledged", func(s *mc.State) (bool, string) {
			if !crashed(s, msg.DataAddr(0)) {
				return false, ""
			}
			for _, op := range s.Node(msg.DataAddr(0)).(*data.Server).Ops() {
				if len(op.Acks) == 2 && (op.Acks[0] == 0) != (op.Acks[1] == 0) {
					return true, ""
				}
			}
			return false, ""
		})},
	}
	for _, c := range cases {
		t.Run(c.sc.Name, func(t *testing.T) {
			o := c.sc.Options(mc.BFS)
			o.Workers = 2
			o.Goals = []mc.Predicate{c.goal}
			r := mc.Search(c.sc.Init(), o)
			if r.Outcome != mc.GoalFound {
				t.Fatalf("%s not reached: %s after %d states (%s: %s)", c.goal.Name, r.Outcome, r.States, r.Predicate, r.Explanation)
			}
			t.Logf("%s: reached in %d steps", c.goal.Name, len(r.Trace))
		})
	}
}
