package runtime

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
)

// The crash tests of a durable cluster: TestRestartAfterSIGKILL kills a
// child process running one, TestPowerLoss cuts the power of its file
// system.

// killLayout has few blocks, so that clients overwrite each block many
// times and block slots are reused.
var killLayout = erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 4, BlockSize: 64 << 10}

const killClients = 4

// TestRestartAfterSIGKILL runs a durable cluster (real files) in a child
// process whose clients overwrite 64 KiB blocks, each client its own
// blocks, logging every write before it starts and every acknowledgement;
// after a random number of acknowledgements the child is killed with
// SIGKILL, in the middle of batches and block writes. Each restarted child
// first checks that every block holds its last acknowledged value (or the
// write started after it) and that every stripe's parity is the encoding of
// its data, then writes again; a last child only checks.
func TestRestartAfterSIGKILL(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "writes.log")
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	for round := 1; round <= 4; round++ {
		last := round == 4
		log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestKillChild$", "-test.v")
		cmd.Env = append(os.Environ(), "AMALGAM_KILL_CHILD="+dir, fmt.Sprint("AMALGAM_KILL_ROUND=", round), fmt.Sprint("AMALGAM_KILL_CHECK_ONLY=", last))
		cmd.Stdout = log
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		failed := func(err error) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("round %d: the child ended: %v\n%s\n%s", round, err, tail(string(out), 40), tail(stderr.String(), 40))
		}
		if last {
			err := <-done
			_ = log.Close()
			if err != nil {
				failed(err)
			}
			checkedRound(t, logPath, round)
			break
		}
		// Kill once enough writes of this round were acknowledged.
		want := 30 + rnd.IntN(120)
		guard := time.After(3 * time.Minute) // a hang guard only
	wait:
		for countAcks(t, logPath, round) < want {
			select {
			case err := <-done:
				failed(err)
			case <-guard:
				break wait
			case <-time.After(5 * time.Millisecond):
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		_ = log.Close()
		checkedRound(t, logPath, round)
		if n := countAcks(t, logPath, round); n < want {
			failed(fmt.Errorf("only %d writes acknowledged", n))
		}
		t.Logf("round %d: killed after %d acknowledged writes", round, want)
	}
}

// checkedRound fails unless the round's child checked the blocks (the
// first has nothing to check).
func checkedRound(t *testing.T, path string, round int) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if round > 1 && !bytes.Contains(b, []byte(fmt.Sprintf("in round %d\n", round))) {
		t.Fatalf("round %d: the restarted child did not check the blocks", round)
	}
}

// tail is the last lines of s, each cut to 300 bytes.
func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	l = l[max(0, len(l)-lines):]
	for i := range l {
		l[i] = l[i][:min(len(l[i]), 300)]
	}
	return strings.Join(l, "\n")
}

func countAcks(t *testing.T, path string, round int) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte(fmt.Sprintf("a %d ", round)))
}

// killValue is the value of client c's seq-th write in a round.
func killValue(round, c, seq int) []byte {
	return randBytes(rand.New(rand.NewPCG(uint64(round)<<32|uint64(c), uint64(seq))), killLayout.BlockSize)
}

// TestKillChild is TestRestartAfterSIGKILL's child process; alone, it does
// nothing.
func TestKillChild(t *testing.T) {
	dir := os.Getenv("AMALGAM_KILL_CHILD")
	if dir == "" {
		t.Skip("the child process of TestRestartAfterSIGKILL")
	}
	var round int
	fmt.Sscan(os.Getenv("AMALGAM_KILL_ROUND"), &round)
	lc := startLocal(t, killLayout, "durable", filepath.Join(dir, "cluster"))
	defer lc.Close()
	checkKilled(t, lc, filepath.Join(dir, "writes.log"))
	if os.Getenv("AMALGAM_KILL_CHECK_ONLY") == "true" {
		return
	}
	var mu sync.Mutex // one line at a time
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	startClients(killClients, round, func() *client.Client { return e2etest.Dial(t, lc.EntryAddr) }, func(c int, cl *client.Client, r *rand.Rand) {
		for seq := 0; ; seq++ {
			b := ownBlock(r, c, killClients, killLayout.NumBlocks())
			say("w %d %d %d %d", round, c, seq, b)
			ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
			err := cl.Write(ctx, b, 0, killValue(round, c, seq))
			cancel()
			if err != nil {
				t.Errorf("write to block %d: %v", b, err)
				return
			}
			say("a %d %d %d %d", round, c, seq, b)
		}
	}).Wait() // until killed
}

// checkKilled checks the blocks against the log of writes: a block holds
// its last acknowledged value, or the value of the write to it that started
// after that (each block has one writer). It logs the write whose value a
// block holds as acknowledged, and checks every stripe's parity.
func checkKilled(t *testing.T, lc *Local, path string) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type write struct{ round, c, seq int }
	acked := map[uint64]write{}
	started := map[uint64]write{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kind string
		var w write
		var b uint64
		if n, _ := fmt.Sscanf(sc.Text(), "%s %d %d %d %d", &kind, &w.round, &w.c, &w.seq, &b); n != 5 {
			continue
		}
		switch kind {
		case "w":
			started[b] = w
		case "a":
			acked[b] = w
			delete(started, b)
		}
	}
	value := func(w write, ok bool) []byte {
		if !ok {
			return make([]byte, killLayout.BlockSize)
		}
		return killValue(w.round, w.c, w.seq)
	}
	for i, got := range readAll(t, e2etest.Dial(t, lc.EntryAddr), killLayout) {
		b := uint64(i)
		a, ok := acked[b]
		if bytes.Equal(got, value(a, ok)) {
			continue
		}
		if s, ok := started[b]; ok && bytes.Equal(got, value(s, true)) {
			fmt.Printf("a %d %d %d %d\n", s.round, s.c, s.seq, b) // it took effect
			continue
		}
		t.Fatalf("block %d holds neither its last acknowledged write %+v nor the one started after it", b, a)
	}
	waitParityConsistent(t, lc)
	fmt.Printf("checked %d blocks in round %s\n", killLayout.NumBlocks(), os.Getenv("AMALGAM_KILL_ROUND"))
}

// TestPowerLoss runs a durable cluster whose stores share one file system
// that can lose power (vfs.NewStrictMem: what was not synced is dropped;
// every sync takes a millisecond).
// Clients write whole blocks, each client its own blocks; at a moment
// chosen by the number of acknowledged writes, the power goes: nothing
// synced afterwards counts, the cluster stops, and the file system keeps
// only what was synced. Restarted, the cluster must hold every write
// acknowledged before the power went (or a later write to the same
// block), and every stripe's parity must be the encoding of its data.
// Block slots are reclaimed every millisecond, so that slots are reused
// (blockfile_reclaim.go) before the power goes.
func TestPowerLoss(t *testing.T) {
	powerLoss(t, testLayout, e2etest.Dial, func(o LocalOptions) powerCluster {
		lc, err := StartLocal(o)
		if err != nil {
			t.Fatal(err)
		}
		return powerCluster{entry: lc.EntryAddr, close: lc.Close, check: func() { waitParityConsistent(t, lc) }}
	})
}

// powerCluster is a durable local cluster of the power-loss tests: its
// entry address, how to stop it, and a check of its own consistency
// after a restart (nil: none).
type powerCluster struct {
	entry string
	close func()
	check func()
}

// powerLoss is TestPowerLoss on the clusters start starts on layout l with
// the options it is given, through clients dial makes.
func powerLoss(t *testing.T, l erasure.Layout, dial func(testing.TB, string) *client.Client, start func(LocalOptions) powerCluster) {
	const clients, rounds = 6, 3
	defer setReclaim(reclaimConfig{every: time.Millisecond})()
	defer setMinFileBlock(0)() // its 64-byte blocks in block files
	mem := vfs.NewStrictMem()
	// Syncs take a while, as on a disk, so that a batch released before
	// its sync would be seen.
	fs := countingFS{FS: mem, beforeSync: func() { time.Sleep(time.Millisecond) }}
	opts := LocalOptions{Layout: l, Durability: "durable", DataDir: "/data", FS: fs, Addr: "127.0.0.1:0"}
	rnd := rand.New(rand.NewPCG(7, 7))
	// last[b] is the value of block b acknowledged before the last power
	// loss, or that restart read back.
	last := map[uint64][]byte{}
	for round := 0; round < rounds; round++ {
		lc := start(opts)
		if round > 0 {
			checkRestored(t, dial(t, lc.entry), l, last)
		}
		// later[b] are the values written to b after its last
		// acknowledged one, or acknowledged after the power went.
		later := map[uint64][][]byte{}
		var mu sync.Mutex
		var frozen atomic.Bool
		var acked atomic.Int64
		crashAt := int64(50 + rnd.IntN(150))
		// A write is bounded only by safetyStop; writes still retrying
		// when the power goes are cancelled once the cluster is down.
		powerOff, cancelWrites := context.WithCancel(context.Background())
		wg := startClients(clients, round, func() *client.Client { return dial(t, lc.entry) }, func(i int, c *client.Client, r *rand.Rand) {
			for !frozen.Load() {
				b := ownBlock(r, i, clients, l.NumBlocks())
				v := randBytes(r, l.BlockSize)
				mu.Lock()
				later[b] = append(later[b], v)
				mu.Unlock()
				ctx, cancel := context.WithTimeout(powerOff, safetyStop)
				err := c.Write(ctx, b, 0, v)
				cancel()
				if err != nil {
					if !frozen.Load() {
						t.Errorf("write to block %d: %v", b, err)
					}
					return
				}
				if !frozen.Load() { // synced before the power went
					mu.Lock()
					last[b], later[b] = v, nil
					mu.Unlock()
					acked.Add(1)
				}
			}
		})
		for acked.Load() < crashAt && !t.Failed() {
			time.Sleep(time.Millisecond)
		}
		frozen.Store(true)
		cutPower(mem, func() { lc.close(); cancelWrites(); wg.Wait() })
		if t.Failed() {
			return
		}
		// Restarted, a block may hold any of the values written after
		// its last acknowledged one: take the one it holds.
		lc = start(opts)
		for i, got := range readAll(t, dial(t, lc.entry), l) {
			b := uint64(i)
			want := last[b]
			if want == nil {
				want = make([]byte, l.BlockSize)
			}
			if !bytes.Equal(got, want) && !slices.ContainsFunc(later[b], func(v []byte) bool { return bytes.Equal(got, v) }) {
				t.Fatalf("round %d: block %d after power loss = %x, want %x (acknowledged) or one of %d later writes", round, b, got, want, len(later[b]))
			}
			last[b] = got
		}
		if lc.check != nil {
			lc.check()
		}
		lc.close()
	}
}

// startClients runs n clients dial connects, each in its goroutine with
// its own random source seeded by round and its number.
func startClients(n, round int, dial func() *client.Client, run func(i int, c *client.Client, r *rand.Rand)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		c := dial()
		wg.Go(func() {
			run(i, c, rand.New(rand.NewPCG(uint64(round), uint64(i))))
		})
	}
	return &wg
}

// checkRestored checks through c that every block of layout l holds its
// value in want.
func checkRestored(t *testing.T, c *client.Client, l erasure.Layout, want map[uint64][]byte) {
	t.Helper()
	for b, got := range readAll(t, c, l) {
		if v, ok := want[uint64(b)]; ok && !bytes.Equal(got, v) {
			t.Fatalf("block %d = %x, want %x", b, got, v)
		}
	}
}

// setReclaim makes stores opened from now on reclaim block slots as rc
// says; the function it returns restores the default.
func setReclaim(rc reclaimConfig) func() {
	old := defaultReclaim
	defaultReclaim = rc
	return func() { defaultReclaim = old }
}

// cutPower loses the power of mem: nothing synced from now on counts while
// stop runs, then mem keeps only what was synced.
func cutPower(mem *vfs.MemFS, stop func()) {
	mem.SetIgnoreSyncs(true)
	stop()
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
}

// setMinFileBlock keeps blocks of n bytes or more in block files; the
// function it returns restores the default.
func setMinFileBlock(n int) func() {
	old := minFileBlock
	minFileBlock = n
	return func() { minFileBlock = old }
}
