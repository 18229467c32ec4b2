//go:build mutants

package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/witness"
)

// mutantCases are the protocol mutants and the checker search that must
// find each. Run with: go test -tags mutants -run TestMutants -v ./mc/
var mutantCases = []struct {
	name  string
	set   func(string)
	sc    *Scenario
	st    mc.Strategy
	finds string // the invariant expected to fail
}{
	{"commit-f-1", setData, Normal, mc.BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
	{"commit-out-of-order", setData, TwoStripes, mc.BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
	{"txn-first-stripe", setData, Txn, mc.BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
	{"forget-result", setData, NormalLossy, mc.BFS, "at most one result per request"},
	{"retry-reexecutes", setData, NormalLossy, mc.BFS, "at most one result per request"},
	{"delta-new-value", setData, Witnesses, mc.BFS, "parity consistent on quiescent stripes"},
	{"delta-after-put", setData, Normal, mc.BFS, "parity consistent on quiescent stripes"},
	{"apply-twice", setParity, Normal, mc.BFS, "parity consistent on quiescent stripes"},
	{"wrong-coefficient", setParity, TwoClients, mc.BFS, "parity consistent on quiescent stripes"},
	{"apply-on-prepare", setParity, Normal, mc.BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
	{"witness-ack-without-holding", setWitness, Witnesses, mc.BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
}

func setData(m string)    { data.Mutant = m }
func setParity(m string)  { parity.Mutant = m }
func setWitness(m string) { witness.Mutant = m }

func TestMutants(t *testing.T) {
	for _, c := range mutantCases {
		t.Run(c.name, func(t *testing.T) {
			opt := mc.Options{MaxTime: 60 * time.Second, Workers: 2}
			c.set("")
			if r := c.sc.Run(c.st, opt); r.Outcome == mc.Violation {
				t.Fatalf("unmutated protocol violates %s on %s: %s", r.Predicate, c.sc.Name, r.Explanation)
			}
			c.set(c.name)
			defer c.set("")
			r := c.sc.Run(c.st, opt)
			if r.Outcome != mc.Violation {
				t.Fatalf("mutant not found: %s after %d states, %v", r.Outcome, r.States, r.Elapsed)
			}
			if r.Predicate != c.finds {
				t.Errorf("found by %q, expected %q: %s", r.Predicate, c.finds, r.Explanation)
			}
			if r.Elapsed > 60*time.Second {
				t.Errorf("took %v, limit 60s", r.Elapsed)
			}
			t.Logf("%s on %s (%s): %s in %v, %d states, trace %d steps: %s",
				c.name, c.sc.Name, c.st, r.Predicate, r.Elapsed.Round(time.Millisecond), r.States, len(r.Trace), r.Explanation)
			// The trace replays to the same violation.
			rp, err := mc.Replay(c.sc.MC(), mc.NewTraceFile(c.sc.MC(), r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Fatalf("replay: %v, predicate %q", err, rp.Predicate)
			}
		})
	}
}
