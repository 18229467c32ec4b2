package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/amalgam-store/amalgam/node"
)

// blockVal is a value of a block of the size, different for every (key,
// version).
func blockVal(size int, k string, ver int) []byte {
	return randBytes(rand.New(rand.NewPCG(uint64(ver), uint64(len(k))*7919+uint64(k[len(k)-1]))), size)
}

// randBytes draws n bytes from r.
func randBytes(r *rand.Rand, n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(r.Uint32())
	}
	return v
}

// ownBlock draws one of the blocks of client c of clients, each writing
// its own blocks: those b < n with b % clients == c.
func ownBlock(r *rand.Rand, c, clients int, n uint64) uint64 {
	return uint64(c) + uint64(clients)*r.Uint64N((n+uint64(clients-1-c))/uint64(clients))
}

// commitBlocks writes the blocks of node a in one synced batch.
func commitBlocks(t *testing.T, st *Store, a node.Addr, vals map[string][]byte, opts *pebble.WriteOptions) error {
	t.Helper()
	b := st.db.NewBatch()
	defer b.Close()
	w := st.writer(b, a, new(node.Enc), nil)
	w.Put("meta", []byte("m"))
	for k, v := range vals {
		w.Put(k, v)
	}
	return b.Commit(opts)
}

// readBlocks reads node a's blocks back, through Scan, and checks that
// Get agrees.
func readBlocks(t *testing.T, st *Store, a node.Addr) map[string][]byte {
	t.Helper()
	r := nodeReader{st, a}
	got := map[string][]byte{}
	if err := r.Scan("b/", func(k string, v []byte) error { got[k] = bytes.Clone(v); return nil }); err != nil {
		t.Fatal(err)
	}
	for k, v := range got {
		g, ok, err := r.Get(k)
		if err != nil || !ok || !bytes.Equal(g, v) {
			t.Fatalf("%s %s: Get = %x, %v, %v; Scan read %x", a, k, g, ok, err, v)
		}
	}
	return got
}

// TestBlockFileCrash writes blocks in three versions, reclaiming the slots
// the first left, then writes a fourth version into those slots and cuts
// the power (vfs.NewStrictMem drops what was not synced): with the fourth
// batch synced, after it was applied but not synced, after it was
// applied with its in-place writes torn (half of each new slot junk on
// disk, the rest lost), and after it was applied unsynced while its WAL
// record reached the disk anyway (as the kernel may write a WAL page back
// before pebble syncs it). Reopened, every block must hold the value of
// the last batch whose WAL record survived, before and after writing more
// blocks.
func TestBlockFileCrash(t *testing.T) {
	defer setMinFileBlock(0)()
	const size = 4096
	nodes := []node.Addr{"d1", "p1"}
	for _, mode := range []string{"synced", "unsynced", "torn", "written back"} {
		t.Run(mode, func(t *testing.T) {
			mem := vfs.NewStrictMem()
			st, err := openStoreRc(mem, "/s", true, time.Hour, reclaimConfig{every: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			want := map[node.Addr]map[string][]byte{}
			var fresh []string // the blocks the last batch wrote
			var walBefore int64
			for ver := 1; ver <= 4; ver++ {
				if ver == 4 {
					walBefore = walBytes(t, mem, "/s")
				}
				opts := pebble.Sync
				if ver == 4 && mode != "synced" {
					opts = pebble.NoSync
				}
				for _, a := range nodes {
					vals := map[string][]byte{}
					for i := 0; i < 8; i++ {
						if ver > 1 && i%ver == 0 {
							continue // some blocks keep an older value
						}
						k := fmt.Sprintf("b/%016x", i)
						vals[k] = blockVal(size, string(a)+k, ver)
					}
					if err := commitBlocks(t, st, a, vals, opts); err != nil {
						t.Fatal(err)
					}
					if want[a] == nil {
						want[a] = map[string][]byte{}
					}
					for k, v := range vals {
						if opts == pebble.Sync || mode == "written back" {
							want[a][k] = v
						}
						if ver == 4 {
							fresh = append(fresh, string(a)+"\x00"+k)
						}
					}
				}
				if ver < 4 {
					if err := st.reclaim(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if mode == "torn" {
				tear(t, st, fresh)
			}
			if mode == "written back" {
				// Pebble writes unsynced records to the file once its
				// 32 KiB buffer is full: fill it.
				if err := commitBlocks(t, st, "d1", map[string][]byte{"filler": make([]byte, 40<<10)}, pebble.NoSync); err != nil {
					t.Fatal(err)
				}
				writeBackWAL(t, mem, "/s", walBefore)
			}
			cutPower(mem, func() { _ = st.Close() })

			st, err = OpenStoreFS(mem, "/s", true)
			if err != nil {
				t.Fatal(err)
			}
			check := func() {
				for _, a := range nodes {
					got := readBlocks(t, st, a)
					if len(got) != len(want[a]) {
						t.Fatalf("%s: %d blocks after the crash, want %d", a, len(got), len(want[a]))
					}
					for k, v := range want[a] {
						if !bytes.Equal(got[k], v) {
							t.Fatalf("%s: %s %s is not its last acknowledged value", mode, a, k)
						}
					}
				}
			}
			check()
			// New blocks after the reopen take free slots, not taken ones.
			vals := map[string][]byte{}
			for i := 3; i < 12; i++ {
				k := fmt.Sprintf("b/%016x", i)
				vals[k] = blockVal(size, "d1"+k, 9)
				want["d1"][k] = vals[k]
			}
			if err := commitBlocks(t, st, "d1", vals, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			check()
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st, err = OpenStoreFS(mem, "/s", true)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			check()
		})
	}
}

// tear makes half of the blocks' newest slots junk on disk, as a crash in
// the middle of their writes could.
func tear(t *testing.T, st *Store, blocks []string) {
	for _, f := range st.blocks.files {
		for _, id := range blocks {
			sl, ok := f.slots[id]
			if !ok {
				t.Fatalf("%q has no slot", id)
			}
			junk := bytes.Repeat([]byte{0xEE}, f.size/2)
			if _, err := f.f.WriteAt(junk, int64(sl)*int64(f.size)); err != nil {
				t.Error(err)
			}
		}
		if err := f.f.Sync(); err != nil {
			t.Error(err)
		}
	}
}

// walBytes is the size of the store's WAL files in dir.
func walBytes(t *testing.T, mem *vfs.MemFS, dir string) int64 {
	t.Helper()
	names, err := mem.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		if fileKind(name) == "wal" {
			fi, err := mem.Stat(mem.PathJoin(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			n += fi.Size()
		}
	}
	return n
}

// writeBackWAL waits until pebble has written the store's latest unsynced
// batches into its WAL files (they hold more than before bytes and stop
// growing), then makes the files durable behind the store's back, as the
// kernel writing a WAL page back early (memory pressure, a sync(2)) would.
func writeBackWAL(t *testing.T, mem *vfs.MemFS, dir string, before int64) {
	t.Helper()
	guard := time.Now().Add(10 * time.Second) // a hang guard only
	for last, n := int64(-1), walBytes(t, mem, dir); n <= before || n != last; last, n = n, walBytes(t, mem, dir) {
		if time.Now().After(guard) {
			t.Fatalf("pebble did not write the unsynced batches to its WAL (%d bytes, %d before)", n, before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	names, err := mem.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if fileKind(name) != "wal" {
			continue
		}
		f, err := mem.OpenReadWrite(mem.PathJoin(dir, name))
		if err == nil {
			err = errors.Join(f.Sync(), f.Close())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestBlockFilePowerLoss writes blocks from concurrent writers, synced and
// lazy batches, while slots are reclaimed every millisecond, and cuts the power at
// a random moment, several times. Reopened, a block holds the value of its
// last acknowledged write (a synced batch whose commit returned before the
// power went) or of a write after it.
func TestBlockFilePowerLoss(t *testing.T) {
	defer setMinFileBlock(0)()
	const writers, blocks, size = 4, 16, 512
	mem := vfs.NewStrictMem()
	fs := countingFS{FS: mem, beforeSync: func() { time.Sleep(100 * time.Microsecond) }}
	acked := map[string][]byte{}   // "<node> <key>" -> last acknowledged value
	later := map[string][][]byte{} // values written after it
	rnd := rand.New(rand.NewPCG(11, 11))
	for round := 0; round < 6; round++ {
		st, err := openStoreRc(fs, "/s", true, time.Millisecond, reclaimConfig{every: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for w := 0; w < writers; w++ {
			a := node.Addr(fmt.Sprint("n", w))
			got := readBlocks(t, st, a)
			for i := 0; i < blocks; i++ {
				id := fmt.Sprintf("%s b/%016x", a, i)
				v, ok := got[fmt.Sprintf("b/%016x", i)]
				if !ok {
					if acked[id] != nil {
						t.Fatalf("round %d: %s lost", round, id)
					}
					continue
				}
				if !bytes.Equal(v, acked[id]) && !slices.ContainsFunc(later[id], func(l []byte) bool { return bytes.Equal(l, v) }) {
					t.Fatalf("round %d: %s holds neither its acknowledged value nor a later one", round, id)
				}
				acked[id], later[id] = v, nil
			}
		}
		var mu sync.Mutex
		var off atomic.Bool
		var n atomic.Int64
		crashAt := int64(20 + rnd.IntN(200))
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Go(func() {
				a := node.Addr(fmt.Sprint("n", w))
				r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for ver := 0; !off.Load(); ver++ {
					vals := map[string][]byte{}
					for j := 0; j < 1+r.IntN(3); j++ {
						k := fmt.Sprintf("b/%016x", r.IntN(blocks))
						vals[k] = blockVal(size, fmt.Sprint(a, k, round), ver)
					}
					mu.Lock()
					for k, v := range vals {
						later[string(a)+" "+k] = append(later[string(a)+" "+k], v)
					}
					mu.Unlock()
					opts := pebble.Sync
					if r.IntN(3) == 0 {
						opts = pebble.NoSync // lazy: never acknowledged here
					}
					if err := commitBlocks(t, st, a, vals, opts); err != nil {
						t.Error(err)
						return
					}
					if opts == pebble.Sync && !off.Load() {
						mu.Lock()
						for k, v := range vals {
							id := string(a) + " " + k
							acked[id], later[id] = v, nil
						}
						mu.Unlock()
						n.Add(1)
					}
				}
			})
		}
		for n.Load() < crashAt && !t.Failed() {
			time.Sleep(100 * time.Microsecond)
		}
		off.Store(true)
		cutPower(mem, func() { wg.Wait(); _ = st.Close() })
		if t.Failed() {
			return
		}
	}
}

// TestBlockFileSizes: blocks below minFileBlock stay values in pebble,
// larger ones (and blocks of a reference's length) go to block files, and
// all read back, also after a reopen.
func TestBlockFileSizes(t *testing.T) {
	mem := vfs.NewStrictMem()
	st, err := OpenStoreFS(mem, "/s", true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for i, size := range []int{refLen, 4096, minFileBlock - 1, minFileBlock, 128 << 10} {
		k := fmt.Sprintf("b/%016x", i)
		want[k] = blockVal(size, k, 1)
	}
	if err := commitBlocks(t, st, "d1", want, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	check := func() {
		for k, v := range want {
			stored, c, err := st.db.Get(nodeKey("d1", k))
			if err != nil {
				t.Fatal(err)
			}
			if ref := len(stored) == refLen; ref != inFile(len(v)) {
				t.Errorf("block of %d bytes stored as %d bytes in pebble", len(v), len(stored))
			}
			_ = c.Close()
		}
		got := readBlocks(t, st, "d1")
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Errorf("block %s of %d bytes read back as %d bytes, not as written", k, len(v), len(got[k]))
			}
		}
	}
	check()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = OpenStoreFS(mem, "/s", true); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check()
}

// Links (node.Linker) name a block's slot without copying it: a link keeps
// the value it was made from while the block is rewritten and slots are
// reclaimed and across a reopen, and its slot is freed once
// the link is deleted; a block kept in pebble is not linked.
func TestBlockLinks(t *testing.T) {
	const size = 128 << 10
	mem := vfs.NewStrictMem()
	st, err := OpenStoreFS(mem, "/s", true)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	batch := func(fn func(w nodeWriter)) {
		t.Helper()
		b := st.db.NewBatch()
		defer b.Close()
		fn(st.writer(b, "d1", new(node.Enc), nil))
		if err := b.Commit(pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	reclaim := func() {
		t.Helper()
		if err := st.reclaim(); err != nil {
			t.Fatal(err)
		}
	}
	get := func(k string) []byte {
		t.Helper()
		v, ok, err := nodeReader{st, "d1"}.Get(k)
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v", k, ok, err)
		}
		return v
	}
	blk := "b/0000000000000001"
	v := func(ver int) []byte { return blockVal(size, blk, ver) }
	batch(func(w nodeWriter) {
		w.Put(blk, v(1))
		w.Put("b/0000000000000002", make([]byte, 4096))
	})
	batch(func(w nodeWriter) {
		if !w.Link("l/1/0", blk) {
			t.Fatal("a block in a block file not linked")
		}
		w.Put(blk, v(2))
		if !w.Link("l/1/1", blk) {
			t.Fatal("a block in a block file not linked")
		}
		if w.Link("l/2/0", "b/0000000000000002") || w.Link("l/2/1", "b/0000000000000003") || w.Link("x/1", blk) {
			t.Fatal("linked a block kept in pebble, an absent block, or to a key not under l/")
		}
	})
	check := func(last int) {
		t.Helper()
		if !bytes.Equal(get("l/1/0"), v(1)) || !bytes.Equal(get("l/1/1"), v(2)) || !bytes.Equal(get(blk), v(last)) {
			t.Fatalf("links or block not as written (block version %d)", last)
		}
	}
	check(2)
	for ver := 3; ver < 8; ver++ { // every free slot gets written
		batch(func(w nodeWriter) { w.Put(blk, v(ver)) })
		reclaim()
		check(ver)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = OpenStoreFS(mem, "/s", true); err != nil {
		t.Fatal(err)
	}
	check(7)
	for ver := 8; ver < 12; ver++ {
		batch(func(w nodeWriter) { w.Put(blk, v(ver)) })
		reclaim()
		check(ver)
	}
	f := st.blocks.files[size]
	linked := []uint64{f.slots[slotID("d1", "l/1/0")], f.slots[slotID("d1", "l/1/1")]}
	batch(func(w nodeWriter) {
		w.Delete("l/1/0")
		w.Delete("l/1/1")
	})
	reclaim()
	if len(f.uses) != 1 {
		t.Fatalf("%d slots in use after the links went, want the block's only", len(f.uses))
	}
	for _, sl := range linked {
		if !slices.Contains(f.free, sl) {
			t.Fatalf("linked slot %d not freed after its link was deleted (free %v)", sl, f.free)
		}
	}
	// The freed slots take new versions; reopened, the store has the
	// last one and no links.
	batch(func(w nodeWriter) { w.Put(blk, v(12)) })
	batch(func(w nodeWriter) { w.Put(blk, v(13)) })
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = OpenStoreFS(mem, "/s", true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(get(blk), v(13)) {
		t.Fatal("block not its last version after its links' slots were written again")
	}
	if _, ok, _ := (nodeReader{st, "d1"}).Get("l/1/0"); ok {
		t.Fatal("a deleted link is back")
	}
}
