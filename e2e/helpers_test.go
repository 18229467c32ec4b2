package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

var bin string // directory holding the built binaries

// command is one of the built binaries (amalgam-server, amalgam-cli) with
// args.
func command(name string, args ...string) *exec.Cmd {
	return exec.Command(filepath.Join(bin, name), args...)
}

func TestMain(m *testing.M) { e2etest.Main(m, &bin, true, "amalgam-server", "amalgam-cli") }

// startDev runs amalgam-server dev and waits until it is ready.
func startDev(t *testing.T, addr, dir string, extra ...string) *e2etest.Proc {
	t.Helper()
	args := append([]string{filepath.Join(bin, "amalgam-server"), "dev", "--addr", addr, "--data-dir", dir, "--blocks", "60", "--block-size", "256"}, extra...)
	return e2etest.StartProc(t, "dev", "ready at", args...)
}

// interrupt stops dev with Ctrl-C (SIGINT) and fails the test unless it
// stops cleanly.
func interrupt(t *testing.T, s *e2etest.Proc) {
	t.Helper()
	exited, err := s.Stop(syscall.SIGINT, e2etest.SafetyStop)
	if !exited {
		t.Fatalf("dev did not stop after Ctrl-C:\n%s", s.Out)
	}
	if err != nil {
		t.Fatalf("dev exited with %v after Ctrl-C:\n%s", err, s.Out)
	}
	if !strings.Contains(s.Out.String(), "stopped") {
		t.Fatalf("dev did not report a clean stop:\n%s", s.Out)
	}
}

// cli runs amalgam-cli --output json and decodes its output; it fails the
// test if the command fails.
func cli(t *testing.T, cluster string, v any, args ...string) {
	t.Helper()
	out, errOut, err := cliRaw(cluster, args...)
	if err != nil {
		t.Fatalf("amalgam-cli %v: %v\n%s%s", args, err, out, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("amalgam-cli %v: output is not JSON (%v):\n%s", args, err, out)
	}
}

// cliRaw runs amalgam-cli --output json. Its request timeout is
// e2etest.SafetyStop, a hang guard; a test that expects a request to time
// out passes its own --timeout, which comes later and wins.
func cliRaw(cluster string, args ...string) (string, string, error) {
	return cliRawCtx(context.Background(), cluster, args...)
}

// cliRawCtx is cliRaw, killed when ctx ends.
func cliRawCtx(ctx context.Context, cluster string, args ...string) (string, string, error) {
	all := append([]string{"--cluster", cluster, "--output", "json", "--timeout", e2etest.SafetyStop.String()}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "amalgam-cli"), all...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// txn is what the tests read of amalgam-cli's JSON for a transaction.
type txn struct {
	Aborted bool `json:"aborted"`
	Results []struct {
		DataHex *string `json:"data_hex"`
		Value   *uint64 `json:"value"`
		OK      *bool   `json:"ok"`
	} `json:"results"`
}

func readHex(t *testing.T, cluster string, block, offset, length int) string {
	t.Helper()
	var r txn
	cli(t, cluster, &r, "read", fmt.Sprint(block), "--offset", fmt.Sprint(offset), "--length", fmt.Sprint(length))
	if len(r.Results) != 1 || r.Results[0].DataHex == nil {
		t.Fatalf("read: %+v", r)
	}
	return *r.Results[0].DataHex
}

// writeAndAdd writes "hello" at offset 3 of block 7 and reads it back,
// then adds 5 and 7 to the counter at offset 16, which returns the new
// value each time.
func writeAndAdd(t *testing.T, addr string) {
	t.Helper()
	var r txn
	cli(t, addr, &r, "write", "7", "--data", "hello", "--offset", "3")
	if got := readHex(t, addr, 7, 0, 10); got != "00000068656c6c6f0000" {
		t.Fatalf("read after write = %s", got)
	}
	for i, want := range []uint64{5, 12} {
		cli(t, addr, &r, "rmw", "7", "--op", "add", "--offset", "16", "--delta", fmt.Sprint([]int{5, 7}[i]))
		if len(r.Results) != 1 || r.Results[0].Value == nil || *r.Results[0].Value != want {
			t.Fatalf("add %d: %+v", i, r)
		}
	}
}

// readBlocks reads the blocks whole, in hex.
func readBlocks(t *testing.T, cluster string, blocks ...int) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, b := range blocks {
		out[b] = readHex(t, cluster, b, 0, 0)
	}
	return out
}

// checkBlocks fails unless every block in want reads whole as want says
// (after when: a restart, a kill).
func checkBlocks(t *testing.T, cluster string, want map[int]string, when string) {
	t.Helper()
	for b, w := range want {
		if got := readHex(t, cluster, b, 0, 0); got != w {
			t.Fatalf("block %d after %s:\n got %s\nwant %s", b, when, got, w)
		}
	}
}
