package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

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
