package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
)

// exitCode is the exit status of a finished amalgam-cli run (0 on success).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("amalgam-cli did not run: %v", err)
	return -1
}

// TestHealthAndLocate runs a cluster of separate node processes with no
// spare: health and status exit 0 while every machine is up and 2 once
// one is killed, naming it; an operation on its shard fails saying so;
// locate places a block where the layout does.
func TestHealthAndLocate(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 10, BlockSize: 64}
	c := startCluster(t, l, "memory")

	var h struct {
		Healthy  bool     `json:"healthy"`
		Problems []string `json:"problems"`
	}
	out, errOut, err := cliRaw(c.entry, "health")
	if code := exitCode(t, err); code != 0 || json.Unmarshal([]byte(out), &h) != nil || !h.Healthy {
		t.Fatalf("health of a healthy cluster: exit %d, %s%s", code, out, errOut)
	}

	var loc struct {
		Shard, Stripe, Position int
		Data                    struct{ Server, Addr string }
		Parity                  []struct{ Server string }
		Witnesses               []struct{ Server string }
	}
	cli(t, c.entry, &loc, "locate", "7")
	s, pos := l.Locate(7)
	if loc.Shard != l.Shard(7) || loc.Stripe != s || loc.Position != pos || loc.Data.Server != "data/4" ||
		len(loc.Parity) != 2 || loc.Parity[0].Server != "parity/1" || loc.Parity[1].Server != "parity/2" || len(loc.Witnesses) != 0 {
		t.Fatalf("locate 7: %+v", loc)
	}
	text, _, err := cliText(c.entry, "locate", "7")
	if err != nil || !strings.Contains(text, "block 7: shard 4, stripe 2 position 1") || !strings.Contains(text, "parity/1 at 127.0.0.1:") {
		t.Fatalf("locate 7 (text): %v\n%s", err, text)
	}

	watchUntilInterrupted(t, c.entry)

	// Bytes stored are reported for Amalgam servers: block 7 is data on
	// machine 4.
	var r txn
	cli(t, c.entry, &r, "write", "7", "--data", "x")
	var sb struct {
		Machines []struct {
			BytesStored int64 `json:"bytes_stored"`
		} `json:"machines"`
		Nodes []struct {
			Addr        string
			BytesStored int64 `json:"bytes_stored"`
		} `json:"nodes"`
	}
	cli(t, c.entry, &sb, "status")
	for _, n := range sb.Nodes {
		if n.Addr == "data/4" && n.BytesStored != int64(l.BlockSize) || sb.Machines[4].BytesStored < int64(l.BlockSize) {
			t.Fatalf("bytes stored after writing block 7: %+v", sb)
		}
	}

	const victim = 2
	c.nodes[victim].Kill()
	out, errOut, err = cliRaw(c.entry, "health")
	if code := exitCode(t, err); code != 2 || json.Unmarshal([]byte(out), &h) != nil || h.Healthy ||
		len(h.Problems) == 0 || !strings.Contains(h.Problems[0], "machine 2 ") || !strings.Contains(h.Problems[0], "down") {
		t.Fatalf("health with machine %d down: exit %d, %s%s", victim, code, out, errOut)
	}
	if !strings.Contains(errOut, "cluster not healthy: machine 2 ") {
		t.Errorf("health's stderr does not name the machine: %q", errOut)
	}
	var st struct {
		Machines []struct{ State string } `json:"machines"`
	}
	// Down, or suspected once the reconfiguration leader has missed its
	// heartbeats for --suspect-after (TestSuspectedMachine).
	out, _, err = cliRaw(c.entry, "status")
	if code := exitCode(t, err); code != 2 || json.Unmarshal([]byte(out), &st) != nil ||
		st.Machines[victim].State != "down" && st.Machines[victim].State != "suspected" || st.Machines[0].State != "up" {
		t.Fatalf("status with machine %d down: exit %d, %s", victim, code, out)
	}
	if _, _, err := cliRaw(c.entry, "status", "--exit-zero"); err != nil {
		t.Errorf("status --exit-zero: %v", err)
	}
	text, _, err = cliText(c.entry, "status")
	if exitCode(t, err) != 2 || !strings.Contains(text, "no spare is registered") {
		t.Errorf("status text with machine %d down:\n%s", victim, text)
	}
	t.Logf("status with machine %d down:\n%s", victim, text)

	// Block 2 is on shard 2; its write cannot commit. It times out after
	// 2 s; the status that explains why has the dial timeout, a safety
	// stop here.
	stuck := []string{"--timeout", "2s", "--dial-timeout", e2etest.SafetyStop.String()}
	_, errOut, err = cliRaw(c.entry, append(stuck, "write", "2", "--data", "x")...)
	if exitCode(t, err) != 1 || !strings.Contains(errOut, "shard 2's data server (machine 2 at") || !strings.Contains(errOut, "no spare is registered") {
		t.Fatalf("write on the down machine's shard: %q", errOut)
	}
	t.Logf("write on shard 2: %s", errOut)
	// Block 3 is on shard 4, in stripe 1, whose parity is on machines 2
	// and 3: with w=0 the stripe has no quorum.
	_, errOut, err = cliRaw(c.entry, append(stuck, "write", "3", "--data", "x")...)
	if exitCode(t, err) != 1 || !strings.Contains(errOut, "stripe 1 has no quorum") || !strings.Contains(errOut, "machine 2 down") {
		t.Fatalf("write on a stripe without quorum: %q", errOut)
	}
	t.Logf("write on stripe 1: %s", errOut)
}

// TestSuspectedMachine: with no spare, a SIGKILLed machine is eventually
// suspected by the reconfiguration leader and, having nowhere to move it,
// the leader leaves it in place: status shows it "suspected" (text and
// JSON) and health exits 2 naming it.
func TestSuspectedMachine(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 10, BlockSize: 64}
	c := startCluster(t, l, "memory")
	type statusJSON struct {
		Machines []struct {
			State, Why string
		} `json:"machines"`
		Suspected []int    `json:"suspected"`
		Problems  []string `json:"problems"`
	}
	var st statusJSON
	out, errOut, err := cliRaw(c.entry, "status")
	if code := exitCode(t, err); code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Suspected == nil || len(st.Suspected) != 0 {
		t.Fatalf("status of a healthy cluster: exit %d, %s%s", code, out, errOut)
	}

	const victim = 3
	c.nodes[victim].Kill()
	// The leader suspects it after --suspect-after (3 s); the deadline
	// only guards against a hang.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st = statusJSON{}
		out, errOut, err = cliRaw(c.entry, "status")
		if code := exitCode(t, err); code != 2 && code != 1 || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("status with machine %d killed (process exited: %v): exit %d, %s%s\nprocesses:\n%s",
				victim, c.nodes[victim].Exited(), code, out, errOut, c.logs())
		}
		if len(st.Machines) == l.N && st.Machines[victim].State == "suspected" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("machine %d was never shown suspected; last status:\n%s%s\nprocesses:\n%s", victim, out, errOut, c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(st.Suspected) != 1 || st.Suspected[0] != victim || !strings.Contains(st.Machines[victim].Why, "down (did not answer)") ||
		!strings.Contains(st.Machines[victim].Why, "has not moved it to a spare") {
		t.Fatalf("status with machine %d suspected: %s", victim, out)
	}
	for m, ms := range st.Machines {
		if m != victim && ms.State != "up" {
			t.Errorf("machine %d is %s: %s", m, ms.State, ms.Why)
		}
	}

	var h struct {
		Healthy  bool     `json:"healthy"`
		Problems []string `json:"problems"`
	}
	out, errOut, err = cliRaw(c.entry, "health")
	if code := exitCode(t, err); code != 2 || json.Unmarshal([]byte(out), &h) != nil || h.Healthy || len(h.Problems) == 0 ||
		!strings.Contains(h.Problems[0], "machine 3 ") || !strings.Contains(h.Problems[0], "is suspected") {
		t.Fatalf("health with machine %d suspected: exit %d, %s%s", victim, code, out, errOut)
	}
	text, _, err := cliText(c.entry, "status")
	if exitCode(t, err) != 2 || !strings.Contains(text, "suspected") || !strings.Contains(text, "no spare is registered") {
		t.Errorf("status text with machine %d suspected:\n%s", victim, text)
	}
	t.Logf("status with machine %d suspected:\n%s", victim, text)
}

// cliText is cliRaw with text output.
func cliText(cluster string, args ...string) (string, string, error) {
	return cliRaw(cluster, append([]string{"--output", "text"}, args...)...)
}

// watchUntilInterrupted: status --watch on a healthy cluster keeps
// sampling (it is still running after many intervals) and exits 0 on
// Ctrl-C, having said the cluster is healthy.
func watchUntilInterrupted(t *testing.T, cluster string) {
	t.Helper()
	cmd := command("amalgam-cli", "--cluster", cluster, "status", "--watch", "--interval", "50ms")
	out := &e2etest.SyncBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitFor(t, out, "healthy")
	// Twenty intervals at least: it must still be watching.
	select {
	case err := <-done:
		t.Fatalf("status --watch exited on its own (%v):\n%s", err, out)
	case <-time.After(20 * 50 * time.Millisecond):
	}
	_ = cmd.Process.Signal(os.Interrupt)
	if err := <-done; err != nil {
		t.Fatalf("status --watch after Ctrl-C: %v\n%s", err, out)
	}
}
