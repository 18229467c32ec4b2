package runtime

import (
	"testing"
	"time"

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
