package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/bench/loadgen"
	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/msg"
)

// cliOut runs amalgam-cli (text output) with stdin and returns stdout.
func cliOut(t *testing.T, cluster string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := command("amalgam-cli", append([]string{"--cluster", cluster, "--timeout", "20s"}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("amalgam-cli %v: %v\n%s", args, err, errOut.String())
	}
	return out.Bytes()
}

// cliFails runs amalgam-cli and checks that it fails with one line on
// stderr containing want.
func cliFails(t *testing.T, cluster, want string, args ...string) {
	t.Helper()
	out, errOut, err := cliRaw(cluster, args...)
	if err == nil {
		t.Fatalf("amalgam-cli %v succeeded: %s", args, out)
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("amalgam-cli %v: want one line containing %q, got %q", args, want, errOut)
	}
}

func randomFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	p := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

type importResult struct {
	Chunks        int `json:"chunks"`
	ChunksResumed int `json:"chunks_resumed"`
}

// TestImportExport imports files into a durable dev cluster (4 KiB
// blocks), exports them back byte for byte, resumes a killed import, and
// refuses bad input before writing anything.
func TestImportExport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs a cluster")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6))
	startDev(t, addr, t.TempDir(), "--blocks", "3000", "--block-size", "4096")

	// A file with a last partial block, imported at block 7.
	path, data := randomFile(t, 1_000_003)
	var res importResult
	cli(t, addr, &res, "import", path, "--first-block", "7", "--concurrency", "8")
	if res.Chunks != 1 || res.ChunksResumed != 0 { // chunks of 1 MiB
		t.Fatalf("import: %+v", res)
	}
	if _, err := os.Stat(path + ".amalgam-import"); !os.IsNotExist(err) {
		t.Fatalf("state file left after a complete import: %v", err)
	}
	last := fmt.Sprint(7 + (len(data)+4095)/4096 - 1)
	if got := cliOut(t, addr, nil, "export", "--blocks", "7-"+last, "--size", fmt.Sprint(len(data))); !bytes.Equal(got, data) {
		t.Fatalf("export to stdout differs from the imported file (%d bytes, want %d)", len(got), len(data))
	}
	outFile := filepath.Join(t.TempDir(), "out.bin")
	cliOut(t, addr, nil, "export", "--blocks", "7-"+last, "-o", outFile, "--concurrency", "3", "--chunk-blocks", "5")
	got, err := os.ReadFile(outFile)
	if err != nil || !bytes.Equal(got[:len(data)], data) || len(got) != (len(data)+4095)/4096*4096 {
		t.Fatalf("export -o: %v, %d bytes", err, len(got))
	}

	// write --file - and read --output raw.
	cliOut(t, addr, []byte("from stdin"), "write", "2990", "--file", "-", "--offset", "5")
	if got := cliOut(t, addr, nil, "read", "2990", "--offset", "5", "--length", "10", "--output", "raw"); string(got) != "from stdin" {
		t.Fatalf("read --output raw: %q", got)
	}

	// Bad input writes nothing.
	before := cliOut(t, addr, nil, "export", "--blocks", "2900-2999")
	big, _ := randomFile(t, 101*4096)
	cliFails(t, addr, "nothing was written", "import", big, "--first-block", "2900")
	cliFails(t, addr, "nothing was written", "import", big, "--first-block", "0", "--last-block", "99")
	cliFails(t, addr, "past the last block", "import", big, "--first-block", "3000")
	cliFails(t, addr, "past the last block", "export", "--blocks", "2990-3000", "-o", outFile+".bad")
	cliFails(t, fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 0)), "unreachable", "--timeout", "1s", "import", big, "--first-block", "2900")
	if after := cliOut(t, addr, nil, "export", "--blocks", "2900-2999"); !bytes.Equal(before, after) {
		t.Fatal("refused imports changed blocks 2900-2999")
	}
	for _, p := range []string{big + ".amalgam-import", outFile + ".bad"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s exists after refused commands", p)
		}
	}

	// An import killed partway resumes without rewriting what was
	// acknowledged.
	path, data = randomFile(t, 2000*4096)
	state := path + ".amalgam-import"
	cmd := command("amalgam-cli", "--cluster", addr, "import", path, "--first-block", "100",
		"--chunk-blocks", "8", "--concurrency", "1", "--no-progress")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := 0
	for deadline := time.Now().Add(e2etest.SafetyStop); acked < 5; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the import recorded %d chunks in %v", acked, e2etest.SafetyStop)
		}
		acked = stateChunks(state)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	acked = stateChunks(state)
	if acked >= 250 {
		t.Skip("the import finished before it could be killed")
	}
	cli(t, addr, &res, "import", path, "--first-block", "100", "--chunk-blocks", "8", "--concurrency", "4")
	if res.Chunks != 250 || res.ChunksResumed < acked {
		t.Fatalf("resumed import: %+v, but %d chunks were acknowledged before the kill", res, acked)
	}
	t.Logf("import killed after %d acknowledged chunks; the resumed run skipped %d of %d", acked, res.ChunksResumed, res.Chunks)
	if got := cliOut(t, addr, nil, "export", "--blocks", "100-2099"); !bytes.Equal(got, data) {
		t.Fatal("export after a resumed import differs from the file")
	}
}

// stateChunks counts the complete chunk lines of an import state file.
func stateChunks(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		n++
	}
	if n > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		n-- // a torn last line
	}
	return max(0, n-1) // the header
}

// nbdServer starts amalgam-server nbd exporting "disk" and returns its
// URI.
func nbdServer(t *testing.T, cluster string, extra ...string) string {
	t.Helper()
	listen := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 0))
	startProc(t, "nbd", "nbd ready at", append([]string{"nbd", "--cluster", cluster, "--listen", listen, "--export", "disk"}, extra...)...)
	return "nbd://" + listen + "/disk"
}

// needTools skips the test unless the named programs are installed.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (apt-get install fio libnbd-bin nbdkit; .ci/run does it)", tool)
		}
	}
}

// fio runs one fio job and fails the test on any error, verification
// errors included.
func fio(t *testing.T, uri string, args ...string) fioResult {
	t.Helper()
	return fioWith(t, append([]string{"--ioengine=nbd", "--uri=" + uri, "--output-format=json", "--name=job", "--verify=crc32c",
		"--do_verify=1", "--verify_fatal=1", "--randrepeat=0"}, args...))
}

// fioWith runs fio with all as its arguments and fails the test on any
// error.
func fioWith(t *testing.T, all []string) fioResult {
	t.Helper()
	cmd := exec.Command("fio", all...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fio %v: %v\n%s", all, err, out)
	}
	var r fioResult
	if i := bytes.IndexByte(out, '{'); i < 0 || json.Unmarshal(out[i:], &r) != nil || len(r.Jobs) != 1 {
		t.Fatalf("fio %v: output is not JSON:\n%s", all, out)
	}
	if r.Jobs[0].Error != 0 {
		t.Fatalf("fio %v: error %d\n%s", all, r.Jobs[0].Error, out)
	}
	return r
}

type fioResult struct {
	Jobs []struct {
		Error int `json:"error"`
		Read  struct {
			IOPS  float64 `json:"iops"`
			Bytes int64   `json:"io_bytes"`
		} `json:"read"`
		Write struct {
			IOPS  float64 `json:"iops"`
			Bytes int64   `json:"io_bytes"`
		} `json:"write"`
	} `json:"jobs"`
}

// TestNBDTools drives an NBD export of a durable dev cluster with tools
// nobody here wrote: fio's nbd engine (random 4 KiB and 128 KiB writes
// verified by crc32c on read-back) and nbdcopy (a 64 MiB file in and out).
func TestNBDTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and runs a cluster")
	}
	needTools(t, "fio", "nbdcopy")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6))
	startDev(t, addr, t.TempDir(), "--blocks", "1024", "--block-size", "65536") // 64 MiB
	uri := nbdServer(t, addr)

	for _, bs := range []string{"4k", "128k"} {
		r := fio(t, uri, "--rw=randwrite", "--bs="+bs, "--size=4m", "--iodepth=16")
		if r.Jobs[0].Write.Bytes != 4<<20 || r.Jobs[0].Read.Bytes != 4<<20 {
			t.Fatalf("fio %s: wrote %d and verified %d bytes, want 4 MiB each", bs, r.Jobs[0].Write.Bytes, r.Jobs[0].Read.Bytes)
		}
	}

	in, data := randomFile(t, 64<<20)
	if out, err := exec.Command("nbdcopy", in, uri).CombinedOutput(); err != nil {
		t.Fatalf("nbdcopy in: %v\n%s", err, out)
	}
	out := filepath.Join(t.TempDir(), "out.bin")
	if b, err := exec.Command("nbdcopy", uri, out).CombinedOutput(); err != nil {
		t.Fatalf("nbdcopy out: %v\n%s", err, b)
	}
	// The export is 1026 blocks (1024 rounded up to whole stripes of 3).
	got, err := os.ReadFile(out)
	if err != nil || len(got) != 1026<<16 || !bytes.Equal(got[:len(data)], data) {
		t.Fatalf("nbdcopy out (%d bytes, %v) differs from the 64 MiB nbdcopy put in", len(got), err)
	}
}

var nbdLong = e2etest.NewOptIn("nbd-long", "run TestNBDKillReplace: fio through NBD while a machine is killed and replaced by a spare (a few minutes)")

// TestNBDKillReplace runs fio's verified random writes through an NBD
// export of a durable cluster of separate processes (a reconfiguration
// replica, five machines and a spare) and kills one machine with SIGKILL
// partway through. The reconfiguration service moves its slot to the
// spare, which rebuilds; fio must finish with no I/O or verification
// error. Run with: go test -run TestNBDKillReplace -v ./e2e/ -args -nbd-long
func TestNBDKillReplace(t *testing.T) {
	nbdLong.Require(t)
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
	e2etest.WaitFor(t, fmt.Sprintf("machine %d moved to the spare", victim), e2etest.SafetyStop, func() (bool, string) {
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

var (
	nbdBench       = e2etest.NewOptIn("nbd-bench", "run TestNBDBench: fio through NBD against the Go client and an nbdkit memory export (several minutes)")
	nbdBenchRounds = flag.Int("nbd-bench-rounds", 5, "TestNBDBench: rounds (each runs every system once, in turn)")
	nbdBenchSecs   = flag.Int("nbd-bench-seconds", 4, "TestNBDBench: seconds per run")
	nbdBenchMode   = flag.String("nbd-bench-durability", "memory", "TestNBDBench: the dev cluster's --durability")
)

// TestNBDBench measures random reads and writes (4 KiB and 128 KiB, 16 in
// flight) three ways, taking turns within every round: fio's nbd engine
// through amalgam-server nbd; the same pattern through client.Pool directly
// (no NBD); and fio against an nbdkit memory export (the NBD protocol and
// fio on their own). It prints medians with min and max, and the medians
// of the per-round ratios. Run with:
//
//	go test -run TestNBDBench -v -timeout 30m ./e2e/ -args -nbd-bench
func TestNBDBench(t *testing.T) {
	nbdBench.Require(t)
	needTools(t, "fio", "nbdkit")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6))
	startDev(t, addr, t.TempDir(), "--blocks", "4096", "--block-size", "4096", "--durability", *nbdBenchMode)
	const size = 4096 * 4096 // the export's first 16 MiB
	uri := nbdServer(t, addr)
	kitPort := e2etest.FreePort(t, 0)
	kit := exec.Command("nbdkit", "--foreground", "--port", fmt.Sprint(kitPort), "--ipaddr", "127.0.0.1", "memory", fmt.Sprint(size))
	if err := kit.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Process.Kill(); _ = kit.Wait() })
	kitURI := fmt.Sprintf("nbd://127.0.0.1:%d/", kitPort)
	time.Sleep(500 * time.Millisecond)

	pool, err := client.DialPool(context.Background(), addr, client.Options{}, 32) // as amalgam-server nbd's --clients
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r, err := client.RangeOf(pool.Layout(), 0, size/4096-1)
	if err != nil {
		t.Fatal(err)
	}
	secs := *nbdBenchSecs
	fioIOPS := func(uri, rw, bs string) float64 {
		res := fioRun(t, uri, "--rw="+rw, "--bs="+bs, "--size=16m", "--iodepth=16", "--time_based", fmt.Sprintf("--runtime=%d", secs))
		if rw == "randread" {
			return res.Jobs[0].Read.IOPS
		}
		return res.Jobs[0].Write.IOPS
	}
	// direct: the same pattern through the pool, 16 closed-loop clients
	// at offsets aligned to bs.
	direct := func(rw string, bs int) float64 {
		doers := make([]loadgen.Doer, 16)
		for i := range doers {
			doers[i] = poolDoer{pool, r, rw == "randread", make([]byte, bs)}
		}
		spec := loadgen.Spec{Workload: loadgen.Write, BlockSize: bs, Blocks: size / uint64(bs), Clients: len(doers),
			Duration: time.Duration(secs) * time.Second, Seed: uint64(time.Now().UnixNano())}
		res := loadgen.Run(context.Background(), spec, doers, nil)
		if res.Errors > 0 {
			t.Errorf("%s %d: %d errors, the first: %s", rw, bs, res.Errors, res.FirstError)
		}
		return res.OpsPerSec
	}
	for _, wl := range []struct {
		rw string
		bs int
	}{{"randwrite", 4096}, {"randread", 4096}, {"randwrite", 128 << 10}, {"randread", 128 << 10}} {
		bs := fmt.Sprintf("%dk", wl.bs>>10)
		var nbdS, goS, kitS, overhead, vsKit []float64
		for range *nbdBenchRounds {
			a := fioIOPS(uri, wl.rw, bs)
			b := direct(wl.rw, wl.bs)
			c := fioIOPS(kitURI, wl.rw, bs)
			nbdS, goS, kitS = append(nbdS, a), append(goS, b), append(kitS, c)
			overhead, vsKit = append(overhead, a/b), append(vsKit, a/c)
		}
		mb := func(iops float64) float64 { return iops * float64(wl.bs) / 1e6 }
		t.Logf("| %s %s | %s (%.1f MB/s) | %s (%.1f MB/s) | %s (%.0f MB/s) | %s | %s |", wl.rw, bs,
			spread(nbdS, "%.0f"), mb(median(nbdS)), spread(goS, "%.0f"), mb(median(goS)), spread(kitS, "%.0f"), mb(median(kitS)),
			spread(overhead, "%.2f"), spread(vsKit, "%.4f"))
	}
}

// poolDoer reads or writes its buffer at the offset of the op's block
// of len(buf) bytes.
type poolDoer struct {
	pool *client.Pool
	r    client.Range
	read bool
	buf  []byte
}

func (d poolDoer) Do(ctx context.Context, op msg.Op) (int, error) {
	off := int64(op.Block) * int64(len(d.buf))
	if d.read {
		return 0, d.pool.ReadAt(ctx, d.r, d.buf, off)
	}
	return 0, d.pool.WriteAt(ctx, d.r, d.buf, off)
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread prints a median with its min and max.
func spread(xs []float64, f string) string {
	return fmt.Sprintf(f+" ("+f+"-"+f+")", median(xs), slices.Min(xs), slices.Max(xs))
}

// fioRun runs fio's nbd engine without verification.
func fioRun(t *testing.T, uri string, args ...string) fioResult {
	t.Helper()
	return fioWith(t, append([]string{"--ioengine=nbd", "--uri=" + uri, "--output-format=json", "--name=job"}, args...))
}
