package runtime

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/node"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// TestLazyBatchCovered: a lazy batch is not durable until a sync covers
// it; the fsync of a synced batch applied after it does, and what it
// covered survives a power loss (vfs.NewStrictMem drops what was not
// synced), while a lazy batch applied after the sync is lost with it.
func TestLazyBatchCovered(t *testing.T) {
	mem := vfs.NewStrictMem()
	st, err := openStore(mem, "/s", true, time.Hour) // no background sync

	if err != nil {
		t.Fatal(err)
	}
	set := func(k string) *pebble.Batch {
		b := st.db.NewBatch()
		if err := b.Set([]byte(k), []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
		return b
	}
	lazy1, err := st.applyLazy(set("lazy1"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.durableLazy(lazy1); ok {
		t.Fatal("a lazy batch counts as durable before any sync")
	}
	b := set("synced")
	covers := st.covered()
	if err := st.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := b.SyncWait(); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	st.markDurable(covers)
	if ok, _ := st.durableLazy(lazy1); !ok {
		t.Fatal("the fsync of a later synced batch does not cover the lazy batch")
	}
	lazy2, err := st.applyLazy(set("lazy2"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.durableLazy(lazy2); ok {
		t.Fatal("a lazy batch applied after the last sync counts as durable")
	}

	// Power loss.
	mem.SetIgnoreSyncs(true)
	_ = st.Close()
	mem.ResetToSyncedState()
	mem.SetIgnoreSyncs(false)
	st, err = OpenStoreFS(mem, "/s", true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for k, want := range map[string]bool{"lazy1": true, "synced": true, "lazy2": false} {
		_, c, err := st.db.Get([]byte(k))
		if got := err == nil; got != want {
			t.Errorf("after the power loss, %s present = %v, want %v (%v)", k, got, want, err)
		}
		if err == nil {
			_ = c.Close()
		}
	}
}

// TestEarlyReplies: a data server's reply leaves before the batch that
// committed its operation is durable (lazysync.go, early sends). With no
// background sync and no flush of carried batches (an hour's delay), each
// write's commit batch is lazy or carried, and only the next synced batch
// of its machine covers it: after the last write's reply, its commit is
// still not durable there; the batches that committed the writes counted
// as lazy or carried ones that sent.
func TestEarlyReplies(t *testing.T) {
	defer setLazyDelay(time.Hour)()
	defer setCarryDelay(time.Hour)()
	CountSyncCauses(true)
	defer CountSyncCauses(false)
	l := testLayout
	lc, c := startDurableMem(t)
	for i := range 3 {
		if err := c.Write(context.Background(), 0, 0, bytes.Repeat([]byte{byte(i + 1)}, l.BlockSize)); err != nil {
			t.Fatal(err)
		}
	}
	m := lc.Machines[l.Shard(0)]
	st := m.store
	st.lazy.mu.Lock()
	applied, durable := st.lazy.applied, st.lazy.durable
	st.lazy.mu.Unlock()
	addr := node.Addr(fmt.Sprintf("data/%d", l.Shard(0)))
	var carried int
	if err := m.Inspect(context.Background(), addr, func(node.Node) { carried = len(m.loop(addr).carry.readies) }); err != nil {
		t.Fatal(err)
	}
	if durable >= applied && carried == 0 {
		t.Errorf("after the last reply, the data server's machine has %d lazy batches, %d durable, and it carries %d: want the last commit not durable yet (%v)",
			applied, durable, carried, SyncCauses())
	}
	var early int
	for cause, n := range SyncCauses() {
		if strings.HasPrefix(cause, "data in[PrepareOK]") && (strings.HasSuffix(cause, "+send lazy") || strings.HasSuffix(cause, "+send carried")) {
			early += n
		}
	}
	if early < 3 {
		t.Errorf("%d lazy data server batches handling PREPARE-OKs sent replies, want 3 (causes %v)", early, SyncCauses())
	}
}

func setLazyDelay(d time.Duration) func() {
	old := lazyDelay
	lazyDelay = d
	return func() { lazyDelay = old }
}

// startDurableMem starts a durable local cluster of testLayout on a
// memory file system, closed when the test ends, and a client of it.
func startDurableMem(t *testing.T) (*Local, *client.Client) {
	lc, err := StartLocal(LocalOptions{Layout: testLayout, Durability: "durable", DataDir: "/data", FS: vfs.NewStrictMem(), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	return lc, e2etest.Dial(t, lc.EntryAddr)
}
