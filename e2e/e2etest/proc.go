// Package e2etest holds what the tests that run whole clusters share:
// building the binaries, starting and killing server processes, free
// loopback addresses, polling, and a client load that records a history
// for porcupine. Only tests import it.
package e2etest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
)

// KeepLogs asks the tests that run server processes to print every
// process's output even when they pass.
var KeepLogs = flag.Bool("keep-logs", false, "print every process's output even when the test passes")

// OptIn is a bool flag, off by default, that a long test needs set.
type OptIn struct {
	name string
	on   *bool
}

// NewOptIn registers the flag -name; usage says what it runs.
func NewOptIn(name, usage string) OptIn { return OptIn{name, flag.Bool(name, false, usage)} }

// On reports whether the flag is set.
func (o OptIn) On() bool { return *o.on }

// Require skips t unless the flag is set.
func (o OptIn) Require(t testing.TB) {
	t.Helper()
	if !*o.on {
		t.Skipf("runs with -%s", o.name)
	}
}

// Tags are the build tags Main builds the commands with ("": none); a
// test file behind a build tag sets them in its init, so that its
// binaries carry what the tag adds (-tags mutants: the mutants).
var Tags string

// Main runs a test binary's tests with the named commands of cmd/
// (amalgam-server, amalgam-cli) built into a temporary directory, which
// *bin names while they run. It parses the flags first; with short set,
// it builds nothing under -short.
func Main(m *testing.M, bin *string, short bool, cmds ...string) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "amalgam-e2e")
	if err != nil {
		panic(err)
	}
	*bin = dir
	if short || !testing.Short() {
		for _, c := range cmds {
			out, err := exec.Command("go", "build", "-tags", Tags, "-o", filepath.Join(dir, c), "github.com/amalgam-store/amalgam/cmd/"+c).CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "building %s: %v\n%s", c, err, out)
				os.Exit(1)
			}
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// SyncBuf is a bytes.Buffer that a child process writes while the test
// reads it.
type SyncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Proc is one server process, restartable with the same command line.
type Proc struct {
	Name string
	Cmd  *exec.Cmd // the current incarnation
	Out  *SyncBuf  // every incarnation's output, in order

	argv  []string
	ready string
	done  chan struct{}
	err   error // the exit error, once done is closed
}

// SafetyStop bounds the waits of the tests that use this package (a
// process getting ready, a dial, a condition): a hang guard, long enough
// that a loaded machine never reaches it, so that reaching it means a hang.
const SafetyStop = 5 * time.Minute

// StartProc runs argv (argv[0] is the program) and waits until its output
// shows ready (failing after SafetyStop); the test's cleanup kills it.
func StartProc(t testing.TB, name, ready string, argv ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Out: &SyncBuf{}, argv: argv, ready: ready}
	p.Start(t)
	t.Cleanup(p.Kill)
	return p
}

// Start runs a new incarnation and waits until its output shows ready.
func (p *Proc) Start(t testing.TB) {
	t.Helper()
	fmt.Fprintf(p.Out, "---- %s starting: %s\n", p.Name, strings.Join(p.argv, " "))
	mark := len(p.Out.String())
	p.Cmd = exec.Command(p.argv[0], p.argv[1:]...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	cmd, done := p.Cmd, p.done
	go func() { p.err = cmd.Wait(); close(done) }()
	deadline := time.After(SafetyStop)
	for !strings.Contains(p.Out.String()[mark:], p.ready) {
		select {
		case <-done:
			t.Fatalf("%s exited before it was ready:\n%s", p.Name, p.Out)
		case <-deadline:
			t.Fatalf("%s not ready after %v:\n%s", p.Name, SafetyStop, p.Out)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Signal sends s to the current incarnation.
func (p *Proc) Signal(s syscall.Signal) { _ = p.Cmd.Process.Signal(s) }

// Kill sends SIGKILL (after SIGCONT: a stopped process must run to die)
// and waits for the process to go.
func (p *Proc) Kill() {
	if p.Cmd == nil || p.Cmd.Process == nil || p.Exited() {
		return
	}
	p.Signal(syscall.SIGCONT)
	p.Signal(syscall.SIGKILL)
	<-p.done
	fmt.Fprintf(p.Out, "---- %s killed (SIGKILL)\n", p.Name)
}

// Stop sends s and waits up to timeout for the process to exit. It
// reports whether it exited, and with what error.
func (p *Proc) Stop(s syscall.Signal, timeout time.Duration) (bool, error) {
	p.Signal(s)
	select {
	case <-p.done:
		return true, p.err
	case <-time.After(timeout):
		return false, nil
	}
}

// Exited reports whether the current incarnation has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// FreePort finds a loopback port p such that p..p+span are free now. It
// draws p below the kernel's ephemeral range, which outgoing connections
// and the ":0" listeners of other tests running at the same time take
// from: a port a killed server frees could otherwise be handed at once to
// another test's cluster, which would then answer in its place.
func FreePort(t testing.TB, span int) int {
	t.Helper()
	lo, hi := 10000, ephemeralLow()-span-1
	if hi <= lo {
		t.Fatalf("no room for %d ports below the ephemeral range", span+1)
	}
	for try := 0; try < 200; try++ {
		p := lo + rand.IntN(hi-lo)
		if portsFree(p, span) {
			return p
		}
	}
	t.Fatal("no free port range")
	return 0
}

// portsFree reports whether loopback ports p..p+span can be listened on.
func portsFree(p, span int) bool {
	for i := 0; i <= span; i++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+i))
		if err != nil {
			return false
		}
		_ = ln.Close()
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default, 32768, where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo int
	if _, err := fmt.Sscan(string(b), &lo); err != nil || lo <= 0 {
		return 32768
	}
	return lo
}

// FreeAddrs returns n addresses on ip whose ports are free now.
func FreeAddrs(t testing.TB, ip string, n int) []string {
	t.Helper()
	var lns []net.Listener
	var out []string
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return out
}

// Dial connects to entries (an address list), failing after SafetyStop,
// and closes the client when the test ends.
func Dial(t testing.TB, entries string) *client.Client {
	t.Helper()
	return DialAttempt(t, entries, 0)
}

// DialAttempt is Dial with attempt as the client's AttemptTimeout (0: the
// client's default).
func DialAttempt(t testing.TB, entries string, attempt time.Duration) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), SafetyStop)
	defer cancel()
	c, err := client.Dial(ctx, entries, client.Options{AttemptTimeout: attempt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// WaitFor polls cond until it holds and returns how long that took; it
// fails the test after timeout, with what cond last said.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < timeout {
		ok, s := cond()
		if ok {
			return time.Since(start)
		}
		last = s
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not after %v (%s)", what, timeout, last)
	return 0
}
