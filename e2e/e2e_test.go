// Package e2e builds the real amalgam-server and amalgam-cli binaries and
// drives them as separate processes on loopback.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

func TestDevCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs a cluster")
	}
	port := e2etest.FreePort(t, 6)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	dir := t.TempDir()
	s := startDev(t, addr, dir)

	var st struct {
		Layout struct {
			Machines  int `json:"machines"`
			BlockSize int `json:"block_size"`
			Blocks    int `json:"blocks"`
		} `json:"layout"`
		Machines []struct{ Addr string } `json:"machines"`
		Nodes    []struct{ Addr string } `json:"nodes"`
	}
	cli(t, addr, &st, "status")
	if st.Layout.Machines != 5 || st.Layout.BlockSize != 256 || st.Layout.Blocks != 60 || len(st.Machines) != 5 || len(st.Nodes) != 10 {
		t.Fatalf("status: %+v", st)
	}

	writeAndAdd(t, addr)
	var r txn
	// xor
	cli(t, addr, &r, "rmw", "7", "--op", "xor", "--hex", "ff01", "--offset", "3")
	if got := readHex(t, addr, 7, 3, 2); got != "9764" {
		t.Fatalf("after xor = %s", got)
	}
	// cas: a failing one returns the old bytes and changes nothing, a
	// matching one swaps.
	cli(t, addr, &r, "rmw", "7", "--op", "cas", "--offset", "5", "--expect", "zz", "--data", "LL")
	if *r.Results[0].OK || *r.Results[0].DataHex != "6c6c" {
		t.Fatalf("failing cas: %+v", r.Results[0])
	}
	cli(t, addr, &r, "rmw", "7", "--op", "cas", "--offset", "5", "--expect", "ll", "--data", "LL")
	if !*r.Results[0].OK || *r.Results[0].DataHex != "6c6c" {
		t.Fatalf("cas: %+v", r.Results[0])
	}
	// txn on blocks of one shard (blocks 3 and 7 are both on machine 4
	// when n=5, g=3: stripe 1 position 0 and stripe 2 position 1).
	cli(t, addr, &r, "txn", "--op", "check:block=7,offset=5,expect=LL", "--op", "write:block=3,data=txn",
		"--op", "add:block=7,offset=16,delta=1", "--op", "read:block=3,length=3")
	if r.Aborted || len(r.Results) != 4 || *r.Results[2].Value != 13 || *r.Results[3].DataHex != "74786e" {
		t.Fatalf("txn: %+v", r)
	}
	// A txn whose check fails applies nothing.
	cli(t, addr, &r, "txn", "--op", "check:block=7,offset=5,expect=no", "--op", "write:block=3,data=BAD")
	if !r.Aborted {
		t.Fatalf("txn with a failing check: %+v", r)
	}
	// From a JSON file.
	f := filepath.Join(t.TempDir(), "ops.json")
	if err := os.WriteFile(f, []byte(`[{"op":"xor","block":3,"hex":"01"},{"op":"read","block":3,"length":3}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	cli(t, addr, &r, "txn", "--file", f)
	if *r.Results[1].DataHex != "75786e" {
		t.Fatalf("txn from file: %+v", r)
	}

	// Bad input: one-line error, non-zero exit, nothing applied.
	before := readHex(t, addr, 7, 0, 0)
	for _, args := range [][]string{
		{"read", "60"}, // unknown block
		{"write", "7", "--data", "x", "--offset", "256"}, // offset past the block
		{"write", "7", "--hex", "00", "--offset", "255", "--data", "y"},
		{"rmw", "7", "--op", "cas", "--expect", "a", "--data", "bb"}, // wrong length
		{"rmw", "7", "--op", "add", "--offset", "250", "--delta", "1"},
		{"txn", "--op", "write:block=7,data=a", "--op", "write:block=1,data=b"}, // spans shards
		{"txn", "--op", "write:block=7,data=a", "--op", "frob:block=7"},
	} {
		out, errOut, err := cliRaw(addr, args...)
		if err == nil {
			t.Errorf("%v: succeeded: %s", args, out)
			continue
		}
		if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines != 0 || !strings.HasPrefix(errOut, "amalgam-cli: ") {
			t.Errorf("%v: error is not one line: %q", args, errOut)
		}
	}
	if after := readHex(t, addr, 7, 0, 0); after != before {
		t.Fatalf("bad input changed block 7:\n%s\n%s", before, after)
	}
	_, errOut, err := cliRaw(fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 0)), "--timeout", "1s", "status")
	if err == nil || !strings.Contains(errOut, "unreachable") {
		t.Errorf("unreachable cluster: err %v, %q", err, errOut)
	}

	// Stop cleanly and restart on the same directory: every block is kept.
	snapshot := readBlocks(t, addr, 3, 7, 59)
	interrupt(t, s)
	s.Start(t)
	checkBlocks(t, addr, snapshot, "restart")
	// And after SIGKILL.
	s.Kill()
	s.Start(t)
	checkBlocks(t, addr, snapshot, "kill -9")
	// A different layout on the same directory is refused.
	cmd := command("amalgam-server", "dev", "--addr", fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6)), "--data-dir", dir, "--blocks", "90")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "holds a cluster with") {
		t.Errorf("restart with other flags: %v\n%s", err, out)
	}
	interrupt(t, s)
}

// devBaselines are the baselines dev runs, with the replicas per group of
// startDev's layout (f=2), which is also their number of machines.
var devBaselines = []struct {
	protocol string
	replicas int
}{{"shardedpaxos", 5}, {"rspaxos", 7}}

// A durable baseline dev cluster keeps every acknowledged write across a
// clean stop and a kill -9: its replicas restart from the pebble stores
// under --data-dir (as followers, so the first read waits for an
// election).
func TestDevBaselinesDurable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs clusters")
	}
	for _, tc := range devBaselines {
		t.Run(tc.protocol, func(t *testing.T) { devBaselineDurable(t, tc.protocol, tc.replicas) })
	}
}

func devBaselineDurable(t *testing.T, protocol string, machines int) {
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, machines+1))
	dir := t.TempDir()
	s := startDev(t, addr, dir, "--protocol", protocol, "--durability", "durable")
	var st struct {
		Durability string `json:"durability"`
	}
	cli(t, addr, &st, "status")
	if st.Durability != "durable" {
		t.Fatalf("status: durability %q, want durable", st.Durability)
	}
	writeAndAdd(t, addr)
	snapshot := readBlocks(t, addr, 3, 7, 59)
	interrupt(t, s)
	s.Start(t)
	checkBlocks(t, addr, snapshot, "restart")
	var r txn
	cli(t, addr, &r, "write", "3", "--data", "after")
	snapshot[3] = readHex(t, addr, 3, 0, 0)
	s.Kill()
	s.Start(t)
	checkBlocks(t, addr, snapshot, "kill -9")
	interrupt(t, s)
}

// The baselines run from the same binary and answer the same CLI:
// amalgam-server dev --protocol shardedpaxos|rspaxos, then writes, RMWs,
// a transaction and status through amalgam-cli --output json.
func TestDevBaselines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs clusters")
	}
	for _, tc := range devBaselines {
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
