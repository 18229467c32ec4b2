package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	deadline := time.Now().Add(30 * time.Second) // a hang guard
	for !strings.Contains(out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within 30s:\n%s", s, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
