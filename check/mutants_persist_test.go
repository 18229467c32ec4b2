//go:build mutants

package check

import (
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
)

// setDataOpNum sets the op counter in a data server's "meta" record.
func setDataOpNum(a node.Addr, disk map[string][]byte, opNum uint64) {
	if !strings.HasPrefix(string(a), "data/") {
		return
	}
	d := node.NewDec(disk["meta"])
	cfgHash := d.Uint64()
	_ = d.Uint64()
	if err := d.Err(); err != nil {
		panic(err)
	}
	var m node.Enc
	m.Uint64(cfgHash)
	m.Uint64(opNum)
	disk["meta"] = m.B
}

// dropPrepares loses the held PREPAREs ("p/" records) of servers whose
// address starts with prefix.
func dropPrepares(prefix string) func(node.Addr, map[string][]byte) {
	return func(a node.Addr, disk map[string][]byte) {
		if strings.HasPrefix(string(a), prefix) {
			for k := range disk {
				if strings.HasPrefix(k, "p/") {
					delete(disk, k)
				}
			}
		}
	}
}

const inv341 = "committed deltas at f+1 servers, committed in op order (3.4.1)"

// persistMutants are servers whose durable state misses something: a
// field Persist never writes or a record Restore forgets, modelled by
// changing what the restarted server reads back (check's persistMutant).
var persistMutants = []struct {
	name  string
	bug   func(node.Addr, map[string][]byte)
	sc    *Scenario
	finds string
	st    mc.Strategy // BFS when empty
}{
	// The data server does not persist its op counter: a restarted server
	// numbers its next operation from 1 again.
	{"data-no-opnum", func(a node.Addr, d map[string][]byte) {
		setDataOpNum(a, d, 1)
	}, RestartData, inv341, ""},
	// The data server's Restore forgets the blocks it wrote.
	{"data-no-blocks", func(a node.Addr, d map[string][]byte) {
		if strings.HasPrefix(string(a), "data/") {
			for k := range d {
				if strings.HasPrefix(k, "b/") {
					delete(d, k)
				}
			}
		}
	}, RestartData, "parity consistent on quiescent stripes", ""},
	// A parity server's Restore forgets the PREPAREs it held.
	{"parity-no-prepares", dropPrepares("parity/"), RestartParity, "parity consistent on quiescent stripes", ""},
	// A witness's Restore forgets the PREPAREs it held.
	{"witness-no-prepares", dropPrepares("witness/"), RestartWitness, inv341, ""},
	// A witness does not persist its incarnation and fences ("rc"): after
	// a restart it takes PREPAREs from the replaced data server again.
	{"witness-no-fence", func(a node.Addr, d map[string][]byte) {
		if strings.HasPrefix(string(a), "witness/") {
			delete(d, "rc")
		}
	}, RestartWitnessReplaceData, "results linearizable", mc.Random},
}

// TestPersistMutants: BFS of the restart scenarios (random walks, seed 1,
// for the one with a replacement) finds each persistence mutant within
// 60 s, with a trace that replays. The unmutated protocol passes the same
// searches (TestRestartScenariosExhaustive; here, 10 s of the same walks).
// Run with: go test -tags mutants -run TestPersistMutants -v ./check/
func TestPersistMutants(t *testing.T) {
	for _, c := range persistMutants {
		t.Run(c.name, func(t *testing.T) {
			st := c.st
			if st == "" {
				st = mc.BFS
			}
			if st == mc.Random {
				if r := c.sc.Run(st, mc.Options{MaxTime: 10 * time.Second, Workers: 2, Seed: 1}); r.Outcome == mc.Violation {
					t.Fatalf("unmutated protocol violates %s on %s: %s", r.Predicate, c.sc.Name, r.Explanation)
				}
			}
			persistMutant = c.bug
			defer func() { persistMutant = nil }()
			r := c.sc.Run(st, mc.Options{MaxTime: 60 * time.Second, Workers: 2, Seed: 1})
			if r.Outcome != mc.Violation {
				t.Fatalf("mutant not found on %s: %s after %d states, %v", c.sc.Name, r.Outcome, r.States, r.Elapsed)
			}
			if c.finds != "" && r.Predicate != c.finds {
				t.Errorf("found by %q, expected %q", r.Predicate, c.finds)
			}
			n := len(r.Trace)
			mc.Explain(c.sc.MC(), r)
			t.Logf("%s on %s: %q in %v, %d states, trace %d steps (%d before minimizing): %s", c.name, c.sc.Name, r.Predicate,
				r.Elapsed.Round(time.Millisecond), r.States, len(r.Trace), n, r.Explanation)
			rp, err := mc.Replay(c.sc.MC(), mc.NewTraceFile(c.sc.MC(), r))
			if err != nil || rp.Predicate != r.Predicate {
				t.Fatalf("replay: %v, predicate %q", err, rp.Predicate)
			}
		})
	}
}
