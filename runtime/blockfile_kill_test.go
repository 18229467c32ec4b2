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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
)

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
	startClients(t, lc, killClients, round, func(c int, cl *client.Client, r *rand.Rand) {
		for seq := 0; ; seq++ {
			b := ownBlock(r, c, killClients, killLayout.NumBlocks())
			say("w %d %d %d %d", round, c, seq, b)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
