package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

// TestVersion: both binaries print their module version, VCS revision and
// Go version, the same build information `go version -m` reads from them.
func TestVersion(t *testing.T) {
	for _, name := range []string{"amalgam-server", "amalgam-cli"} {
		path := filepath.Join(bin, name)
		gv, err := exec.Command("go", "version", "-m", path).Output()
		if err != nil {
			t.Fatalf("go version -m %s: %v", name, err)
		}
		wantRev := "unknown"
		if m := regexp.MustCompile(`build\s+vcs\.revision=(\S+)`).FindSubmatch(gv); m != nil {
			wantRev = string(m[1])
		}
		out, err := exec.Command(path, "version", "--output", "json").Output()
		if err != nil {
			t.Fatalf("%s version --output json: %v", name, err)
		}
		var v struct{ Version, Revision, Time, Go string }
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s version: not JSON: %s", name, out)
		}
		if v.Version == "" || v.Revision != wantRev || !strings.HasPrefix(v.Go, "go1.") || v.Time == "" {
			t.Fatalf("%s version: %+v, want revision %s", name, v, wantRev)
		}
		text, err := exec.Command(path, "version").Output()
		if err != nil || !strings.HasPrefix(string(text), name+" "+v.Version+", revision "+v.Revision) || strings.Count(string(text), "\n") != 1 {
			t.Fatalf("%s version: %v %q", name, err, text)
		}
	}
}

// TestConfigFile starts dev from a YAML file (layout, durability, metrics,
// JSON logs) with one setting overridden by the environment and one by a
// flag: the cluster runs as the three sources say, and its metrics carry
// the build and process information.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6))
	cfg := filepath.Join(dir, "amalgam.yaml")
	if err := os.WriteFile(cfg, []byte(`
log-format: json
log-level: debug
durability: memory
dev:
  blocks: 30
  block-size: 128
  metrics-addr: 127.0.0.1:0
  data-dir: `+filepath.Join(dir, "data")+`
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := command("amalgam-server", "--config", cfg, "dev", "--addr", addr, "--block-size", "64")
	cmd.Env = append(os.Environ(), "AMALGAM_BLOCKS=45", "AMALGAM_BLOCK_SIZE=256")
	out := &e2etest.SyncBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, out, "ready at")

	var st struct {
		Durability string
		Layout     struct {
			Blocks    int `json:"blocks"`
			BlockSize int `json:"block_size"`
		}
	}
	cli(t, addr, &st, "status")
	// blocks from the environment over the file, block size from the flag
	// over both, durability from the file.
	if st.Layout.Blocks != 45 || st.Layout.BlockSize != 64 || st.Durability != "memory" {
		t.Fatalf("status: %+v\n%s", st, out)
	}
	m := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no metrics address in the output:\n%s", out)
	}
	samples := scrape(t, m[1])
	found := false
	for k, v := range samples {
		found = found || strings.HasPrefix(k, "amalgam_build_info{") && v == 1
	}
	if !found || samples["process_resident_memory_bytes"] <= 0 {
		t.Fatalf("metrics lack amalgam_build_info or process metrics")
	}
	if resp, err := http.Get(strings.TrimSuffix(m[1], "metrics") + "debug/pprof/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("pprof served without --pprof")
		}
	}
	// JSON logs: every log line on the output is one JSON object.
	logs := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "{") {
			var v map[string]any
			if err := json.Unmarshal([]byte(line), &v); err != nil || v["msg"] == nil {
				t.Errorf("log line is not a JSON record: %q", line)
			}
			logs++
		} else if strings.HasPrefix(line, "time=") {
			t.Errorf("text log line despite log-format json: %q", line)
		}
	}
	if logs == 0 {
		t.Errorf("no JSON log lines:\n%s", out)
	}
}

// waitFor waits until out shows s (the process's readiness line).
func waitFor(t *testing.T, out *e2etest.SyncBuf, s string) {
	t.Helper()
	deadline := time.Now().Add(e2etest.SafetyStop) // a hang guard
	for !strings.Contains(out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %v:\n%s", s, e2etest.SafetyStop, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape fetches a Prometheus text exposition and returns every sample,
// keyed by its series as printed (`name{label="value",...}`).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetrics scrapes a dev cluster's --metrics-addr around a few
// operations: the operation counters and latency histograms move by the
// operations run, and every node reports its pending operations and the
// bytes it stores, data and parity servers their rebuild progress.
func TestMetrics(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6))
	s := startDev(t, addr, filepath.Join(t.TempDir(), "data"), "--durability", "memory", "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindStringSubmatch(s.Out.String())
	if m == nil {
		t.Fatalf("dev did not print its metrics address:\n%s", s.Out)
	}
	url := m[1]

	before := scrape(t, url)
	const writes, adds, reads = 3, 2, 4
	var r txn
	for i := 0; i < writes; i++ {
		cli(t, addr, &r, "write", "7", "--data", fmt.Sprint("v", i))
	}
	for i := 0; i < adds; i++ {
		cli(t, addr, &r, "rmw", "7", "--op", "add", "--offset", "16", "--delta", "1")
	}
	for i := 0; i < reads; i++ {
		cli(t, addr, &r, "read", "7")
	}
	after := scrape(t, url)

	for kind, n := range map[string]float64{"write": writes, "add": adds, "read": reads} {
		ops := fmt.Sprintf(`amalgam_operations_total{code="OK",kind="%s"}`, kind)
		if d := after[ops] - before[ops]; d != n {
			t.Errorf("%s moved by %v over %v %s operations", ops, d, n, kind)
		}
		lat := fmt.Sprintf(`amalgam_operation_seconds_count{kind="%s"}`, kind)
		if d := after[lat] - before[lat]; d != n {
			t.Errorf("%s moved by %v over %v %s operations", lat, d, n, kind)
		}
	}
	// Block 7 is on machine 4 (n=5, g=3); its stripe's parity blocks are
	// on two other machines.
	if got := after[`amalgam_bytes_stored{node="data/4"}`]; got != 256 {
		t.Errorf("data/4 stores %v bytes, want one 256-byte block", got)
	}
	parityBytes := 0.0
	for m := 0; m < 5; m++ {
		for _, role := range []string{"data", "parity"} {
			for _, name := range []string{"amalgam_bytes_stored", "amalgam_pending_operations", "amalgam_rebuild_blocks_left", "amalgam_rebuild_bytes_total"} {
				if _, ok := after[fmt.Sprintf(`%s{node="%s/%d"}`, name, role, m)]; !ok {
					t.Errorf("no %s for %s/%d", name, role, m)
				}
			}
		}
		if _, ok := after[fmt.Sprintf(`amalgam_held_requests{node="data/%d"}`, m)]; !ok {
			t.Errorf("no amalgam_held_requests for data/%d", m)
		}
		parityBytes += after[fmt.Sprintf(`amalgam_bytes_stored{node="parity/%d"}`, m)]
	}
	if parityBytes != 2*256 {
		t.Errorf("parity servers store %v bytes, want two 256-byte parity blocks", parityBytes)
	}
	if _, ok := after["amalgam_client_requests_in_flight"]; !ok {
		t.Errorf("no amalgam_client_requests_in_flight")
	}
	if _, ok := after["amalgam_stream_reconnects_total"]; !ok {
		t.Errorf("no amalgam_stream_reconnects_total")
	}
	// Each write and add streams at least a PREPARE to each of the two
	// parity servers, on other machines; frames carry one or more.
	msgs := after["amalgam_stream_messages_total"] - before["amalgam_stream_messages_total"]
	frames := after["amalgam_stream_frames_total"] - before["amalgam_stream_frames_total"]
	if msgs < 2*(writes+adds) || frames < 1 || frames > msgs {
		t.Errorf("stream messages moved by %v and frames by %v over %d writes and adds", msgs, frames, writes+adds)
	}
	if after["amalgam_node_bytes_sent_total"] <= before["amalgam_node_bytes_sent_total"] {
		t.Errorf("amalgam_node_bytes_sent_total did not move")
	}
	interrupt(t, s)
}
