//go:build mutants

package mc

import (
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
	st    Strategy
	finds string // the invariant expected to fail
}{
	{"commit-f-1", setData, Normal, BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
	{"commit-out-of-order", setData, TwoStripes, BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
	{"txn-first-stripe", setData, Txn, BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
	{"forget-result", setData, NormalLossy, BFS, "at most one result per request"},
	{"retry-reexecutes", setData, NormalLossy, BFS, "at most one result per request"},
	{"delta-new-value", setData, Witnesses, BFS, "parity consistent on quiescent stripes"},
	{"delta-after-put", setData, Normal, BFS, "parity consistent on quiescent stripes"},
	{"apply-twice", setParity, Normal, BFS, "parity consistent on quiescent stripes"},
	{"wrong-coefficient", setParity, TwoClients, BFS, "parity consistent on quiescent stripes"},
	{"apply-on-prepare", setParity, Normal, BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
	{"witness-ack-without-holding", setWitness, Witnesses, BFS, "committed deltas at f+1 servers, committed in op order (3.4.1)"},
}

func setData(m string)    { data.Mutant = m }
func setParity(m string)  { parity.Mutant = m }
func setWitness(m string) { witness.Mutant = m }

func TestMutants(t *testing.T) {
	for _, c := range mutantCases {
		t.Run(c.name, func(t *testing.T) {
			opt := Options{MaxTime: 60 * time.Second, Workers: 2}
			c.set("")
			if r := c.sc.Run(c.st, opt); r.Outcome == Violation {
				t.Fatalf("unmutated protocol violates %s on %s: %s", r.Predicate, c.sc.Name, r.Explanation)
			}
			c.set(c.name)
			defer c.set("")
			r := c.sc.Run(c.st, opt)
			if r.Outcome != Violation {
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
			rp, err := Replay(c.sc, NewTraceFile(c.sc, r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Fatalf("replay: %v, predicate %q", err, rp.Predicate)
			}
		})
	}
}
