// Package reconfig_test drives a cluster of separate amalgam-server
// processes through machine failures that the reconfiguration service
// repairs with spares (docs/reconfiguration.md, "End to end").
package reconfig_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
)

var bin string

func TestMain(m *testing.M) { e2etest.Main(m, &bin, true, "amalgam-server", "amalgam-cli") }

func start(t *testing.T, name, ready string, args ...string) *e2etest.Proc {
	t.Helper()
	return e2etest.StartProc(t, name, ready, 30*time.Second, append([]string{filepath.Join(bin, "amalgam-server")}, args...)...)
}

// TestReplaceMachines runs a 3-replica reconfiguration service, 6 machines
// (g=3, f=2) and a spare as separate processes, with clients running mixed
// operations throughout. One machine is killed (SIGKILL): the service
// suspects it, moves its slot to the spare and replaces its servers, which
// rebuild; status returns to healthy. The killed machine's host rejoins as
// a spare; then the reconfiguration leader and a second machine are
// killed: the cluster recovers again. No acknowledged write may be lost
// and the history, final reads included, must be linearizable.
func TestReplaceMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process replacement test: about a minute")
	}
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 0, Stripes: 12, BlockSize: 64}
	const (
		workers   = 6
		shared    = 18 // the mixed workload runs on blocks [0, shared)
		opTimeout = 30 * time.Second
	)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	victim1 := rng.IntN(l.N)
	victim2 := (victim1 + 1 + rng.IntN(l.N-1)) % l.N
	t.Logf("seed %d: killing machine %d, then the reconfiguration leader and machine %d", seed, victim1, victim2)

	dir := t.TempDir()
	addrs := e2etest.FreeAddrs(t, "127.0.0.1", 3+l.N+1)
	reps, machines, spareAddr := addrs[:3], addrs[3:3+l.N], addrs[3+l.N]
	entries := strings.Join(reps, ",")
	var procs []*e2etest.Proc
	logs := func() string {
		var b strings.Builder
		for _, p := range procs {
			b.WriteString(p.Out.String())
		}
		return b.String()
	}
	defer func() {
		if t.Failed() || *e2etest.KeepLogs {
			t.Logf("process output:\n%s", logs())
		}
	}()
	repProc := map[string]*e2etest.Proc{}
	for i, a := range reps {
		var peers []string
		for j, b := range reps {
			if j != i {
				peers = append(peers, fmt.Sprintf("%d=%s", j+1, b))
			}
		}
		p := start(t, fmt.Sprintf("reconfig %d", i+1), "reconfiguration service",
			"reconfig", "--id", fmt.Sprint(i+1), "--peers", strings.Join(peers, ","), "--addr", a,
			"--data-dir", filepath.Join(dir, fmt.Sprintf("reconfig-%d", i+1)), "--machine-addrs", strings.Join(machines, ","),
			"--g", fmt.Sprint(l.G), "--f", fmt.Sprint(l.F), "--w", fmt.Sprint(l.W), "--block-size", fmt.Sprint(l.BlockSize),
			"--blocks", fmt.Sprint(l.NumBlocks()), "--suspect-after", "1500ms")
		procs = append(procs, p)
		repProc[a] = p
	}
	nodeProc := map[int]*e2etest.Proc{}
	for m, a := range machines {
		p := start(t, fmt.Sprintf("node %d", m), "serving at", "node", "--machine", fmt.Sprint(m), "--addr", a,
			"--reconfig", entries, "--data-dir", filepath.Join(dir, fmt.Sprintf("node-%d", m)))
		procs = append(procs, p)
		nodeProc[m] = p
	}
	procs = append(procs, start(t, "spare", "spare serving at", "node", "--spare", "--addr", spareAddr,
		"--reconfig", entries, "--data-dir", filepath.Join(dir, "spare")))

	ctx := context.Background()
	admin := e2etest.Dial(t, entries)

	// Clients, as in e2e/kill_test.go (e2etest.Load): mixed transactions on shared blocks,
	// and every fourth one a counter written into the worker's ledger block.
	ld := &e2etest.Load{T: t, Entries: entries, Layout: l, Seed: seed, Workers: workers, Shared: shared, Timeout: opTimeout}
	ld.Start()
	defer ld.Stop()

	history1 := func() ([]string, uint64, bool, string, []string, error) { return clusterHistory(admin) }
	healthy := func(num uint64) (bool, string) { return clusterHealthy(entries, num) }
	recover := func(victim int, spare string, num uint64) (detect, replace, rebuild time.Duration) {
		killed := time.Now()
		detect = e2etest.WaitFor(t, fmt.Sprintf("machine %d moved to the spare", victim), 30*time.Second, func() (bool, string) {
			hosts, _, _, _, _, err := history1()
			if err != nil {
				return false, err.Error()
			}
			return hosts[victim] == spare, fmt.Sprint(hosts)
		})
		replace = e2etest.WaitFor(t, fmt.Sprintf("machine %d's servers replaced", victim), 60*time.Second, func() (bool, string) {
			_, n, busy, _, _, err := history1()
			if err != nil {
				return false, err.Error()
			}
			return n == num && !busy, fmt.Sprintf("configuration %d, busy %v", n, busy)
		})
		rebuild = e2etest.WaitFor(t, "healthy again", 120*time.Second, func() (bool, string) { return healthy(num) })
		t.Logf("machine %d killed: detected and moved to the spare in %v, servers replaced %v later, rebuilt and healthy %v later (%v in all)",
			victim, detect.Round(time.Millisecond), replace.Round(time.Millisecond), rebuild.Round(time.Millisecond),
			time.Since(killed).Round(time.Millisecond))
		return
	}

	e2etest.WaitFor(t, "healthy at first", 30*time.Second, func() (bool, string) { return healthy(0) })
	time.Sleep(2 * time.Second)

	// 1. SIGKILL a machine.
	nodeProc[victim1].Kill()
	t.Logf("killed machine %d at %s", victim1, machines[victim1])
	recover(victim1, spareAddr, 2)

	// 2. Its host rejoins as a spare, with an empty data directory.
	procs = append(procs, start(t, "rejoined spare", "spare serving at", "node", "--spare", "--addr", machines[victim1],
		"--reconfig", entries, "--data-dir", filepath.Join(dir, "rejoined")))
	e2etest.WaitFor(t, "the rejoined spare registered", 30*time.Second, func() (bool, string) {
		_, _, _, _, spares, err := history1()
		if err != nil {
			return false, err.Error()
		}
		return len(spares) == 1 && spares[0] == machines[victim1], fmt.Sprint(spares)
	})
	time.Sleep(time.Second)

	// 3. Kill the reconfiguration leader and a second machine.
	_, _, _, leader, _, err := history1()
	if err != nil || repProc[leader] == nil {
		t.Fatalf("no leader known (%q, %v)", leader, err)
	}
	repProc[leader].Kill()
	victimHost := machines[victim2]
	if victim2 == victim1 {
		t.Fatal("victims collide")
	}
	nodeProc[victim2].Kill()
	t.Logf("killed the reconfiguration leader at %s and machine %d at %s", leader, victim2, victimHost)
	recover(victim2, machines[victim1], 4)
	time.Sleep(2 * time.Second)

	ld.Stop()
	if t.Failed() {
		return
	}

	// Final reads of every block, in the history too.
	ld.FinalReads(ctx, uint64(shared+workers), opTimeout)
	if acked := ld.Acked(); acked < 50 {
		t.Fatalf("only %d acknowledged writes: the test exercised too little", acked)
	}
	history := ld.History()
	if res, viz := ld.Check(60*time.Second, "replace"); res != porcupine.Ok {
		t.Fatalf("history of %d operations (%d pending) is %s, not linearizable; visualization in %s", len(history), ld.Pending(), res, viz)
	}
	t.Logf("%d operations (%d acknowledged writes, %d pending at the end), linearizable; no acknowledged write lost", len(history), ld.Acked(), ld.Pending())
}

// clusterHealthy asks amalgam-cli, as an operator would, whether the
// cluster at entries is healthy in configuration num.
func clusterHealthy(entries string, num uint64) (bool, string) {
	out, err := exec.Command(filepath.Join(bin, "amalgam-cli"), "--cluster", entries, "--output", "json", "--timeout", "5s", "status").CombinedOutput()
	if err != nil {
		return false, strings.TrimSpace(string(out))
	}
	var st struct {
		ConfigNum uint64 `json:"config_num"`
		Healthy   bool   `json:"healthy"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return false, err.Error()
	}
	return st.Healthy && st.ConfigNum == num, fmt.Sprintf("configuration %d, healthy %v", st.ConfigNum, st.Healthy)
}

// clusterHistory asks the reconfiguration service for the machines' hosts,
// the newest configuration's number, whether it is still replacing, the
// leading replica and the spares.
func clusterHistory(admin *client.Client) (hosts []string, num uint64, busy bool, leader string, spares []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	h, err := admin.History(ctx)
	if err != nil {
		return nil, 0, false, "", nil, err
	}
	cfgs := h.GetConfigs()
	return h.GetDirectory().GetHosts(), cfgs[len(cfgs)-1].GetNum(), h.GetBusy(), h.GetLeaderAddr(), h.GetDirectory().GetSpares(), nil
}
