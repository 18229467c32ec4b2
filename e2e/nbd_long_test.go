package e2e

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

var nbdLong = flag.Bool("nbd-long", false, "run TestNBDKillReplace: fio through NBD while a machine is killed and replaced by a spare (a few minutes)")

// TestNBDKillReplace runs fio's verified random writes through an NBD
// export of a durable cluster of separate processes (a reconfiguration
// replica, five machines and a spare) and kills one machine with SIGKILL
// partway through. The reconfiguration service moves its slot to the
// spare, which rebuilds; fio must finish with no I/O or verification
// error. Run with: go test -run TestNBDKillReplace -v ./e2e/ -args -nbd-long
func TestNBDKillReplace(t *testing.T) {
	if !*nbdLong {
		t.Skip("long: run with -nbd-long")
	}
	needTools(t, "fio")
	const machines = 5
	dir := t.TempDir()
	port := e2etest.FreePort(t, machines+1)
	entry := fmt.Sprintf("127.0.0.1:%d", port)
	var addrs []string
	for m := range machines + 1 {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port+1+m))
	}
	spare := addrs[machines]
	procs := []*e2etest.Proc{startProc(t, "reconfig", "reconfiguration service", "reconfig", "--addr", entry,
		"--data-dir", filepath.Join(dir, "reconfig"), "--machine-addrs", strings.Join(addrs[:machines], ","),
		"--block-size", "4096", "--blocks", "6000", "--suspect-after", "1500ms")}
	for m := range machines {
		procs = append(procs, startProc(t, fmt.Sprintf("node %d", m), "serving at", "node", "--machine", fmt.Sprint(m),
			"--addr", addrs[m], "--reconfig", entry, "--data-dir", filepath.Join(dir, fmt.Sprintf("node-%d", m))))
	}
	procs = append(procs, startProc(t, "spare", "spare serving at", "node", "--spare", "--addr", spare,
		"--reconfig", entry, "--data-dir", filepath.Join(dir, "spare")))
	defer func() {
		if t.Failed() {
			for _, p := range procs {
				t.Logf("%s", p.Out.String())
			}
		}
	}()
	uri := nbdServer(t, entry, "--timeout", "5m")

	victim := 1
	killed := make(chan time.Time, 1)
	go func() {
		time.Sleep(8 * time.Second)
		procs[1+victim].Kill()
		killed <- time.Now()
	}()
	start := time.Now()
	r := fio(t, uri, "--rw=randwrite", "--bs=4k", "--size=16m", "--iodepth=16")
	fioDone := time.Now()
	at := <-killed
	t.Logf("fio 4k: %d bytes written and verified in %v; machine %d killed %v in", r.Jobs[0].Write.Bytes, time.Since(start).Round(time.Second),
		victim, at.Sub(start).Round(time.Second))
	if at.After(fioDone) {
		t.Fatal("fio finished before the machine was killed")
	}

	admin := e2etest.Dial(t, entry)
	e2etest.WaitFor(t, fmt.Sprintf("machine %d moved to the spare", victim), 60*time.Second, func() (bool, string) {
		st, err := admin.Status(context.Background())
		if err != nil {
			return false, err.Error()
		}
		return st.GetMachines()[victim].GetAddr() == spare, fmt.Sprint(st.GetMachines())
	})
	// And after the replacement, another verified pass of 128 KiB writes.
	r = fio(t, uri, "--rw=randwrite", "--bs=128k", "--size=16m", "--iodepth=8")
	t.Logf("fio 128k after the replacement: %d bytes written and verified", r.Jobs[0].Write.Bytes)
}
