package runtime

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

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
	const clients, rounds = 6, 3
	defer setReclaim(reclaimConfig{every: time.Millisecond})()
	defer setMinFileBlock(0)() // its 64-byte blocks in block files
	l := testLayout
	mem := vfs.NewStrictMem()
	// Syncs take a while, as on a disk, so that a batch released before
	// its sync would be seen.
	fs := countingFS{FS: mem, beforeSync: func() { time.Sleep(time.Millisecond) }}
	rnd := rand.New(rand.NewPCG(7, 7))
	// last[b] is the value of block b acknowledged before the last power
	// loss, or that restart read back.
	last := map[uint64][]byte{}
	for round := 0; round < rounds; round++ {
		lc, err := StartLocal(LocalOptions{Layout: l, Durability: "durable", DataDir: "/data", FS: fs, Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		if round > 0 {
			checkRestored(t, lc, last)
		}
		// later[b] are the values written to b after its last
		// acknowledged one, or acknowledged after the power went.
		later := map[uint64][][]byte{}
		var mu sync.Mutex
		var frozen atomic.Bool
		var acked atomic.Int64
		crashAt := int64(50 + rnd.IntN(150))
		wg := startClients(t, lc, clients, round, func(i int, c *client.Client, r *rand.Rand) {
			for !frozen.Load() {
				b := ownBlock(r, i, clients, l.NumBlocks())
				v := randBytes(r, l.BlockSize)
				mu.Lock()
				later[b] = append(later[b], v)
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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
		cutPower(mem, func() { lc.Close(); wg.Wait() })
		if t.Failed() {
			return
		}
		// Restarted, a block may hold any of the values written after
		// its last acknowledged one: take the one it holds.
		lc, err = StartLocal(LocalOptions{Layout: l, Durability: "durable", DataDir: "/data", FS: fs, Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range readAll(t, e2etest.Dial(t, lc.EntryAddr), l) {
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
		waitParityConsistent(t, lc)
		lc.Close()
	}
}

// startClients runs n clients on lc, each in its goroutine with its own
// random source seeded by round and its number.
func startClients(t *testing.T, lc *Local, n, round int, run func(i int, c *client.Client, r *rand.Rand)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		c := e2etest.Dial(t, lc.EntryAddr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(i, c, rand.New(rand.NewPCG(uint64(round), uint64(i))))
		}()
	}
	return &wg
}

// checkRestored checks that every block holds its value in want.
func checkRestored(t *testing.T, lc *Local, want map[uint64][]byte) {
	t.Helper()
	for b, got := range readAll(t, e2etest.Dial(t, lc.EntryAddr), lc.Cluster.Config.Layout) {
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
