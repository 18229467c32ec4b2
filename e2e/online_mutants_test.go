//go:build mutants

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/check"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/online"
	"github.com/amalgam-store/amalgam/runtime"
)

// The binaries of this package's tests carry the mutants.
func init() { e2etest.Tags = "mutants" }

// onlineLayout is the mutant clusters' layout: three stripes, the load's
// transactions on the first two (which the ledger blocks of stripe 2 do
// not touch), small blocks so that cuts are small.
var onlineLayout = erasure.Layout{N: 5, G: 3, F: 2, Stripes: 3, BlockSize: 64}

// predicted is what the test reads of mc online --output json and of mc
// online replay --output json.
type predicted struct {
	Predicate   string `json:"predicate"`
	Explanation string `json:"explanation"`
	Depth       int    `json:"depth"`
	TraceLength int    `json:"trace_length"`
	TraceFile   string `json:"trace_file"`
	Cut         string `json:"cut"`
}

// Online checking end to end: amalgam-server dev runs a protocol mutant
// whose bug needs a particular interleaving, clients load it, amalgam-cli
// mc online predicts the violation of the commit invariant ahead of the
// live cluster, from a cut it captured and saved, and amalgam-cli mc
// online replay replays the saved trace from the saved cut to the same
// violation. Then a second cluster shows that the server runs the bug.
func TestOnlineMutantE2E(t *testing.T) {
	for _, mutant := range []string{"commit-out-of-order", "txn-first-stripe"} {
		t.Run(mutant, func(t *testing.T) { onlineMutant(t, mutant) })
	}
}

// onlineRuns bounds the mc online runs per mutant, and onlineCuts the
// cuts each searches: a prediction at the cut itself (depth 0: the bug
// already happened) ends a run without the prediction ahead.
const onlineRuns, onlineCuts = 3, 100

func onlineMutant(t *testing.T, mutant string) {
	start := time.Now()
	dev, addr := mutantDev(t, mutant)
	ld := startLoad(t, addr)

	var found *predicted
	var dir string
	for run := 1; found == nil && run <= onlineRuns; run++ {
		dir = filepath.Join(t.TempDir(), fmt.Sprint(run))
		sum := mcOnline(t, addr, mutant, dir)
		for i, f := range sum.Predicted {
			if f.Predicate != check.Inv341 {
				t.Fatalf("run %d: predicted %q, want %q: %s", run, f.Predicate, check.Inv341, f.Explanation)
			}
			if f.Depth > 0 {
				found = &sum.Predicted[i]
				break
			}
			t.Logf("run %d: the cut itself violates the invariant (the bug happened live): %s", run, f.Explanation)
		}
		t.Logf("run %d: %d rounds, %d cuts searched (%d states), %d not a cut, %d dropped; %d predictions",
			run, sum.Rounds, sum.Cuts, sum.States, sum.NotACut, sum.Dropped, len(sum.Predicted))
	}
	if found == nil {
		t.Fatalf("no violation of %q predicted ahead of the cluster in %d runs of at most %d cuts", check.Inv341, onlineRuns, onlineCuts)
	}
	if found.TraceLength != found.Depth {
		t.Fatalf("the trace has %d events for a prediction %d events ahead", found.TraceLength, found.Depth)
	}

	// The trace starts from a cut of this cluster that mc online saved.
	if filepath.Dir(found.Cut) != dir || filepath.Dir(found.TraceFile) != dir {
		t.Fatalf("cut %s and trace %s are not in --dir %s", found.Cut, found.TraceFile, dir)
	}
	cut, err := online.LoadCut(found.Cut)
	if err != nil {
		t.Fatal(err)
	}
	if cut.Cluster != runtime.ClusterID(onlineLayout) || cut.Layout != onlineLayout || len(cut.Nodes) == 0 {
		t.Fatalf("the saved cut is of cluster %s (%d nodes), want this cluster %s", cut.Cluster, len(cut.Nodes), runtime.ClusterID(onlineLayout))
	}

	// Offline, with the cluster stopped: the trace replays from the cut to
	// the same violation.
	ld.Stop()
	dev.Kill()
	var rp predicted
	cli(t, addr, &rp, "mc", "online", "replay", "--mutant", mutant, "--snapshot", found.Cut, found.TraceFile)
	if rp.Predicate != check.Inv341 || rp.TraceLength != found.Depth {
		t.Fatalf("replay: %q after %d events, want %q after %d", rp.Predicate, rp.TraceLength, check.Inv341, found.Depth)
	}
	t.Logf("%s: predicted %d events ahead from %s (%d nodes, %d stream messages in flight), replayed offline; %d operations; %.1fs",
		mutant, found.Depth, filepath.Base(found.Cut), len(cut.Nodes), len(cut.InFlight), ld.Ops(), time.Since(start).Seconds())
	t.Logf("the violation: %s", rp.Explanation)

	serverRunsMutant(t, mutant)
}

// serverRunsMutant checks that amalgam-server --mutant runs the bug: the
// search above would predict from a correct cluster's cuts too, as it
// runs the mutant's code. The interleaving is rare on a live cluster, so
// each mutant's check makes it or catches it on a second cluster.
func serverRunsMutant(t *testing.T, mutant string) {
	switch mutant {
	case "commit-out-of-order":
		commitsOutOfOrder(t)
	case "txn-first-stripe":
		immediateCheckRefuses(t, mutant)
	default:
		t.Fatalf("no check that the server runs %s", mutant)
	}
}

// commitsOutOfOrder pauses the stream from parity/4 to data/0, which
// carries data/0's acknowledgements on stripe 0 (blocks 0 to 2) but not on
// stripe 1 (onlineLayout), for 10 minutes. An add on block 0 then stays
// pending at data/0; a correct data server commits a later add on block 4
// (stripe 1, data/0) only after it, the mutant at once.
func commitsOutOfOrder(t *testing.T) {
	dev, addr := mutantDev(t, "commit-out-of-order", "--metrics-addr", "127.0.0.1:0")
	url := metricsURL(t, dev)
	steer := command("amalgam-cli", "--cluster", addr, "mc", "online", "steer", "--from", "parity/4", "--to", "data/0",
		"--kind", "stream", "--for", "10m", "--max-states", "200")
	if out, err := steer.CombinedOutput(); err != nil {
		t.Fatalf("mc online steer: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first, later := e2etest.Dial(t, addr), e2etest.Dial(t, addr)
	firstDone := make(chan error, 1)
	go func() { _, err := first.Add(ctx, 0, 0, 1); firstDone <- err }()
	const pending = `amalgam_pending_operations{node="data/0"}`
	e2etest.WaitFor(t, "the add on block 0 pending at data/0", e2etest.SafetyStop, func() (bool, string) {
		n := scrape(t, url)[pending]
		return n == 1, fmt.Sprintf("%s %v", pending, n)
	})
	if _, err := later.Add(ctx, 4, 0, 1); err != nil {
		t.Fatalf("the add on block 4 did not commit while the add on block 0 waits: does the server run commit-out-of-order? %v", err)
	}
	select {
	case err := <-firstDone:
		t.Fatalf("the add on block 0 returned (%v) while parity/4's acknowledgements are paused", err)
	default:
	}
	t.Logf("commit-out-of-order: data/0 committed an add on block 4 while the earlier one on block 0 waited for parity/4")
}

// immediateCheckRefuses runs the mutant with the immediate safety check on
// under load: a data server attempts the mutant's step and the check
// postpones it. On the unmutated protocol it postpones nothing (online's
// TestSteeringKeepsLinearizable).
func immediateCheckRefuses(t *testing.T, mutant string) {
	dev, addr := mutantDev(t, mutant, "--immediate-check", "--metrics-addr", "127.0.0.1:0")
	url := metricsURL(t, dev)
	ld := startLoad(t, addr)
	const refusals, maxOps = "amalgam_immediate_check_refusals_total", 20000
	for scrape(t, url)[refusals] == 0 {
		if ld.Ops() > maxOps {
			t.Fatalf("%s: the immediate check postponed nothing in %d operations: does the server run the mutant?", mutant, ld.Ops())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: the immediate check postponed the mutant's step within %d operations", mutant, ld.Ops())
}

// metricsURL is the /metrics address dev printed.
func metricsURL(t *testing.T, dev *e2etest.Proc) string {
	t.Helper()
	m := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindStringSubmatch(dev.Out.String())
	if m == nil {
		t.Fatalf("dev did not print its metrics address:\n%s", dev.Out)
	}
	return m[1]
}

// mutantDev starts amalgam-server dev --mutant on onlineLayout, in memory,
// with extra flags.
func mutantDev(t *testing.T, mutant string, extra ...string) (*e2etest.Proc, string) {
	t.Helper()
	l := onlineLayout
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, l.N))
	args := append([]string{filepath.Join(bin, "amalgam-server"), "dev", "--addr", addr, "--durability", "memory",
		"--blocks", fmt.Sprint(l.NumBlocks()), "--block-size", fmt.Sprint(l.BlockSize), "--mutant", mutant}, extra...)
	dev := e2etest.StartProc(t, "dev", "ready at", args...)
	if !strings.Contains(dev.Out.String(), "MUTANT "+mutant+": this server runs an injected bug") {
		t.Fatalf("dev does not say it runs %s:\n%s", mutant, dev.Out)
	}
	return dev, addr
}

// startLoad runs three clients of transactions on blocks 0 to 5 (stripes 0
// and 1) and ledger writes on blocks 6 to 8, until the test ends.
func startLoad(t *testing.T, addr string) *e2etest.Load {
	ld := &e2etest.Load{T: t, Entries: addr, Layout: onlineLayout, Seed: 1, Workers: 3, Shared: 6, Timeout: 10 * time.Second}
	ld.Start()
	t.Cleanup(ld.Stop)
	return ld
}

// onlineSummary is what the test reads of mc online --output json.
type onlineSummary struct {
	Rounds, Cuts, States, Dropped int
	NotACut                       int `json:"not_a_cut"`
	Predicted                     []predicted
}

// mcOnline runs amalgam-cli mc online on the mutant cluster until its
// first prediction or onlineCuts cuts, saving in dir. It exits with
// status 3 when it predicted a violation.
func mcOnline(t *testing.T, addr, mutant, dir string) onlineSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "amalgam-cli"), "--cluster", addr, "--output", "json",
		"mc", "online", "--mutant", mutant, "--every", "150ms", "--max-states", "3000", "--timer-fires", "1",
		"--cuts", fmt.Sprint(onlineCuts), "--stop", "--dir", dir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mc online did not end within 10 minutes (%d cuts at most):\n%s", onlineCuts, errOut.String())
	}
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
		t.Fatalf("mc online: %v\n%s%s", err, out.String(), errOut.String())
	}
	var sum onlineSummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("mc online: output is not JSON (%v):\n%s", err, out.String())
	}
	if (err == nil) != (len(sum.Predicted) == 0) {
		t.Fatalf("mc online exited with %v and predicted %d violations", err, len(sum.Predicted))
	}
	return sum
}
