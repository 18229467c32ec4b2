package e2e

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/bench/loadgen"
	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/msg"
)

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
