package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

// The baselines run from the same binary and answer the same CLI:
// amalgam-server dev --protocol shardedpaxos|rspaxos, then writes, RMWs,
// a transaction and status through amalgam-cli --output json.
func TestDevBaselines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs clusters")
	}
	for _, tc := range []struct {
		protocol string
		replicas int // per group, f=2
	}{{"shardedpaxos", 5}, {"rspaxos", 7}} {
		t.Run(tc.protocol, func(t *testing.T) {
			port := e2etest.FreePort(t, tc.replicas+1)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			s := startDev(t, addr, t.TempDir(), "--protocol", tc.protocol)
			if !strings.Contains(s.Out.String(), tc.protocol+" dev cluster ready") {
				t.Fatalf("dev output:\n%s", s.Out)
			}
			var st struct {
				Protocol   string                  `json:"protocol"`
				Durability string                  `json:"durability"`
				Machines   []struct{ Addr string } `json:"machines"`
				Nodes      []struct {
					Addr        string `json:"addr"`
					BytesStored int64  `json:"bytes_stored"`
				} `json:"nodes"`
				Healthy bool `json:"healthy"`
			}
			cli(t, addr, &st, "status")
			if st.Protocol != tc.protocol || st.Durability != "memory" || len(st.Machines) != tc.replicas ||
				len(st.Nodes) != 5*tc.replicas || !st.Healthy {
				t.Fatalf("status: %+v", st)
			}
			writeAndAdd(t, addr)
			var r txn
			// A failing check aborts the whole transaction.
			cli(t, addr, &r, "txn", "--op", "check:block=7,offset=3,expect=nope", "--op", "write:block=7,data=XX")
			if !r.Aborted {
				t.Fatalf("txn with a failing check: %+v", r)
			}
			if got := readHex(t, addr, 7, 0, 2); got != "0000" {
				t.Fatalf("aborted txn wrote: %s", got)
			}
			// Bad input: one-line error, nothing applied.
			if _, errOut, err := cliRaw(addr, "write", "100000", "--data", "x"); err == nil || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("write to a missing block: err %v, stderr %q", err, errOut)
			}
			cli(t, addr, &st, "status")
			var stored int64
			for _, n := range st.Nodes {
				stored += n.BytesStored
			}
			if stored == 0 {
				t.Fatalf("replicas store nothing after writes: %+v", st.Nodes)
			}
			interrupt(t, s)
		})
	}
}
