// Package reconfig_test drives a cluster of separate amalgam-server
// processes through machine failures that the reconfiguration service
// repairs with spares (docs/reconfiguration.md, "End to end").
package reconfig_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
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

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/workload"
)

var bin string

var keep = flag.Bool("keep-logs", false, "print every process's output even when the test passes")

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "amalgam-reconfig-e2e")
	if err != nil {
		panic(err)
	}
	bin = dir
	for _, c := range []string{"amalgam-server", "amalgam-cli"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, c), "../../cmd/"+c).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", c, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuf is a goroutine-safe output buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuf
	done chan struct{}
}

func start(t *testing.T, name, ready string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, out: &syncBuf{}, done: make(chan struct{})}
	fmt.Fprintf(p.out, "---- %s: amalgam-server %s\n", name, strings.Join(args, " "))
	p.cmd = exec.Command(filepath.Join(bin, "amalgam-server"), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	deadline := time.After(30 * time.Second)
	for !strings.Contains(p.out.String(), ready) {
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready:\n%s", name, p.out)
		case <-deadline:
			t.Fatalf("%s not ready after 30s:\n%s", name, p.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p
}

func (p *proc) kill() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func freeAddrs(t *testing.T, n int) []string {
	var lns []net.Listener
	var out []string
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
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

func writes(ops []msg.Op) bool {
	for _, op := range ops {
		if op.Kind != msg.OpRead && op.Kind != msg.OpCheck {
			return true
		}
	}
	return false
}

// TestReplaceMachines runs a 3-replica reconfiguration service, 6 machines
// (g=3, f=2) and a spare as separate processes, with clients running mixed
// operations throughout. One machine is killed (SIGKILL): the service
// suspects it, moves its slot to the spare and replaces its servers, which
// rebuild; status returns to healthy. The killed machine's host rejoins as
// a spare; then the reconfiguration leader and a second machine are
// killed: the cluster recovers again. No acknowledged write may be lost
// and the history, final reads included, must be linearizable.
func TestReplaceMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process replacement test: about a minute")
	}
	l := erasure.Layout{N: 6, G: 3, F: 2, W: 0, Stripes: 12, BlockSize: 64}
	const (
		workers   = 6
		shared    = 18 // the mixed workload runs on blocks [0, shared)
		ledger    = shared
		opTimeout = 30 * time.Second
	)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	victim1 := rng.IntN(l.N)
	victim2 := (victim1 + 1 + rng.IntN(l.N-1)) % l.N
	t.Logf("seed %d: killing machine %d, then the reconfiguration leader and machine %d", seed, victim1, victim2)

	dir := t.TempDir()
	addrs := freeAddrs(t, 3+l.N+1)
	reps, machines, spareAddr := addrs[:3], addrs[3:3+l.N], addrs[3+l.N]
	entries := strings.Join(reps, ",")
	var procs []*proc
	logs := func() string {
		var b strings.Builder
		for _, p := range procs {
			b.WriteString(p.out.String())
		}
		return b.String()
	}
	defer func() {
		if t.Failed() || *keep {
			t.Logf("process output:\n%s", logs())
		}
	}()
	repProc := map[string]*proc{}
	for i, a := range reps {
		var peers []string
		for j, b := range reps {
			if j != i {
				peers = append(peers, fmt.Sprintf("%d=%s", j+1, b))
			}
		}
		p := start(t, fmt.Sprintf("reconfig %d", i+1), "reconfiguration service",
			"reconfig", "--id", fmt.Sprint(i+1), "--peers", strings.Join(peers, ","), "--addr", a,
			"--data-dir", filepath.Join(dir, fmt.Sprintf("reconfig-%d", i+1)), "--machine-addrs", strings.Join(machines, ","),
			"--g", fmt.Sprint(l.G), "--f", fmt.Sprint(l.F), "--w", fmt.Sprint(l.W), "--block-size", fmt.Sprint(l.BlockSize),
			"--blocks", fmt.Sprint(l.NumBlocks()), "--suspect-after", "1500ms")
		procs = append(procs, p)
		repProc[a] = p
	}
	nodeProc := map[int]*proc{}
	for m, a := range machines {
		p := start(t, fmt.Sprintf("node %d", m), "serving at", "node", "--machine", fmt.Sprint(m), "--addr", a,
			"--reconfig", entries, "--data-dir", filepath.Join(dir, fmt.Sprintf("node-%d", m)))
		procs = append(procs, p)
		nodeProc[m] = p
	}
	procs = append(procs, start(t, "spare", "spare serving at", "node", "--spare", "--addr", spareAddr,
		"--reconfig", entries, "--data-dir", filepath.Join(dir, "spare")))

	ctx := context.Background()
	admin, err := client.Dial(ctx, entries, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	// Clients, as in e2e/kill_test.go: mixed transactions on shared blocks,
	// and every fourth one a counter written into the worker's ledger block.
	begin := time.Now()
	now := func() int64 { return time.Since(begin).Nanoseconds() }
	var (
		mu       sync.Mutex
		history  []porcupine.Operation
		pending  int
		acked    int
		nextCID  = workers
		lastAck  [workers]uint64
		inFlight [workers][]uint64
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl, err := client.Dial(ctx, entries, client.Options{AttemptTimeout: time.Second})
			if err != nil {
				t.Errorf("worker %d: %v", w, err)
				return
			}
			defer func() { cl.Close() }()
			cid := w
			wrnd := rand.New(rand.NewPCG(seed, uint64(w)+2))
			var script [][]msg.Op
			var counter uint64
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if len(script) == 0 {
					script = workload.Generate(wrnd.Uint64, l, shared, 256, workload.DefaultMix)
				}
				ops := script[0]
				script = script[1:]
				var ledgerVal uint64
				if i%4 == 3 {
					counter++
					ledgerVal = counter
					ops = []msg.Op{{Kind: msg.OpWrite, Block: uint64(ledger + w), Data: binary.LittleEndian.AppendUint64(nil, counter)}}
				}
				octx, cancel := context.WithTimeout(ctx, opTimeout)
				call := now()
				out, err := cl.Txn(octx, ops)
				ret := now()
				cancel()
				op := porcupine.Operation{ClientId: cid, Input: ops, Call: call}
				switch {
				case err == nil:
					op.Output, op.Return = msg.Reply{Outcome: out}, ret
				case errors.Is(err, client.ErrInvalid):
					t.Errorf("worker %d: %s refused: %v", w, workload.DescribeTxn(ops), err)
					return
				default:
					op.Output, op.Return = nil, math.MaxInt64 // may take effect any time later
				}
				mu.Lock()
				history = append(history, op)
				if op.Output == nil {
					pending++
					if ledgerVal > 0 {
						inFlight[w] = append(inFlight[w], ledgerVal)
					}
					cid = nextCID
					nextCID++
				} else {
					if writes(ops) && !out.Aborted {
						acked++
					}
					if ledgerVal > 0 {
						lastAck[w] = ledgerVal
					}
				}
				mu.Unlock()
				if op.Output == nil {
					t.Logf("worker %d: %s timed out after %v (%v); recorded as pending", w, workload.DescribeTxn(ops), time.Duration(ret-call), err)
					cl.Close()
					if cl, err = client.Dial(ctx, entries, client.Options{AttemptTimeout: time.Second}); err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
				}
			}
		}(w)
	}

	poll := func(what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
		t.Helper()
		s := time.Now()
		var last string
		for time.Since(s) < timeout {
			ok, why := cond()
			if ok {
				return time.Since(s)
			}
			last = why
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s: not after %v (%s)", what, timeout, last)
		return 0
	}
	history1 := func() (hosts []string, num uint64, busy bool, leader string, spares []string, err error) {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		h, err := admin.History(actx)
		if err != nil {
			return nil, 0, false, "", nil, err
		}
		cfgs := h.GetConfigs()
		return h.GetDirectory().GetHosts(), cfgs[len(cfgs)-1].GetNum(), h.GetBusy(), h.GetLeaderAddr(), h.GetDirectory().GetSpares(), nil
	}
	// healthy asks amalgam-cli, as an operator would.
	healthy := func(num uint64) (bool, string) {
		out, err := exec.Command(filepath.Join(bin, "amalgam-cli"), "--cluster", entries, "--output", "json", "--timeout", "5s", "status").CombinedOutput()
		if err != nil {
			return false, strings.TrimSpace(string(out))
		}
		var st struct {
			ConfigNum uint64 `json:"config_num"`
			Healthy   bool   `json:"healthy"`
		}
		if err := json.Unmarshal(out, &st); err != nil {
			return false, err.Error()
		}
		return st.Healthy && st.ConfigNum == num, fmt.Sprintf("configuration %d, healthy %v", st.ConfigNum, st.Healthy)
	}
	recover := func(victim int, spare string, num uint64) (detect, replace, rebuild time.Duration) {
		killed := time.Now()
		detect = poll(fmt.Sprintf("machine %d moved to the spare", victim), 30*time.Second, func() (bool, string) {
			hosts, _, _, _, _, err := history1()
			if err != nil {
				return false, err.Error()
			}
			return hosts[victim] == spare, fmt.Sprint(hosts)
		})
		replace = poll(fmt.Sprintf("machine %d's servers replaced", victim), 60*time.Second, func() (bool, string) {
			_, n, busy, _, _, err := history1()
			if err != nil {
				return false, err.Error()
			}
			return n == num && !busy, fmt.Sprintf("configuration %d, busy %v", n, busy)
		})
		rebuild = poll("healthy again", 120*time.Second, func() (bool, string) { return healthy(num) })
		t.Logf("machine %d killed: detected and moved to the spare in %v, servers replaced %v later, rebuilt and healthy %v later (%v in all)",
			victim, detect.Round(time.Millisecond), replace.Round(time.Millisecond), rebuild.Round(time.Millisecond),
			time.Since(killed).Round(time.Millisecond))
		return
	}

	poll("healthy at first", 30*time.Second, func() (bool, string) { return healthy(0) })
	time.Sleep(2 * time.Second)

	// 1. SIGKILL a machine.
	nodeProc[victim1].kill()
	t.Logf("killed machine %d at %s", victim1, machines[victim1])
	recover(victim1, spareAddr, 2)

	// 2. Its host rejoins as a spare, with an empty data directory.
	procs = append(procs, start(t, "rejoined spare", "spare serving at", "node", "--spare", "--addr", machines[victim1],
		"--reconfig", entries, "--data-dir", filepath.Join(dir, "rejoined")))
	poll("the rejoined spare registered", 30*time.Second, func() (bool, string) {
		_, _, _, _, spares, err := history1()
		if err != nil {
			return false, err.Error()
		}
		return len(spares) == 1 && spares[0] == machines[victim1], fmt.Sprint(spares)
	})
	time.Sleep(time.Second)

	// 3. Kill the reconfiguration leader and a second machine.
	_, _, _, leader, _, err := history1()
	if err != nil || repProc[leader] == nil {
		t.Fatalf("no leader known (%q, %v)", leader, err)
	}
	repProc[leader].kill()
	victimHost := machines[victim2]
	if victim2 == victim1 {
		t.Fatal("victims collide")
	}
	nodeProc[victim2].kill()
	t.Logf("killed the reconfiguration leader at %s and machine %d at %s", leader, victim2, victimHost)
	recover(victim2, machines[victim1], 4)
	time.Sleep(2 * time.Second)

	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}

	// Final reads of every block, in the history too.
	final, err := client.Dial(ctx, entries, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer final.Close()
	for b := uint64(0); b < uint64(ledger+workers); b++ {
		ops := []msg.Op{{Kind: msg.OpRead, Block: b}}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		call := now()
		out, err := final.Txn(octx, ops)
		ret := now()
		cancel()
		if err != nil {
			t.Fatalf("final read of block %d: %v", b, err)
		}
		history = append(history, porcupine.Operation{ClientId: nextCID, Input: ops, Call: call, Output: msg.Reply{Outcome: out}, Return: ret})
		if b >= ledger {
			w := int(b) - ledger
			v := binary.LittleEndian.Uint64(out.Results[0].Data)
			if v < lastAck[w] {
				t.Errorf("ledger of worker %d holds %d; %d was acknowledged (in flight: %v): an acknowledged write was lost", w, v, lastAck[w], inFlight[w])
			}
		}
	}
	if acked < 50 {
		t.Fatalf("only %d acknowledged writes: the test exercised too little", acked)
	}
	res, info := porcupine.CheckOperationsVerbose(workload.Model(l), history, 60*time.Second)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("amalgam-replace-%d.html", seed))
		if f, err := os.Create(path); err == nil {
			_ = porcupine.Visualize(workload.Model(l), info, f)
			_ = f.Close()
		}
		t.Fatalf("history of %d operations (%d pending) is %s, not linearizable; visualization in %s", len(history), pending, res, path)
	}
	t.Logf("%d operations (%d acknowledged writes, %d pending at the end), linearizable; no acknowledged write lost", len(history), acked, pending)
}
