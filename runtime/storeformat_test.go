package runtime

import (
	"errors"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// A store is marked with this build's format when opened, a store marked
// with a later one is refused (nothing of it read or written), and an
// earlier or missing mark is raised to this build's.
func TestStoreFormat(t *testing.T) {
	mem := vfs.NewMem()
	st, err := OpenStoreFS(mem, "/s", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := formatOf(t, st); got != strconv.Itoa(storeFormat) {
		t.Fatalf("a new store's format is %q, want %d", got, storeFormat)
	}
	setFormat(t, st, []byte(strconv.Itoa(storeFormat+1)))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStoreFS(mem, "/s", false); !errors.Is(err, errNewerStore) {
		t.Fatalf("opening a store of format %d: %v, want a refusal", storeFormat+1, err)
	}
	// Refused without a change: its mark is still the later format.
	db, err := pebble.Open("/s", &pebble.Options{FS: mem, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	v, closer, err := db.Get(formatKey)
	if err != nil || string(v) != strconv.Itoa(storeFormat+1) {
		t.Fatalf("after the refusal the format is %q (%v)", v, err)
	}
	_ = closer.Close()
	// An older store (no mark) opens and is marked.
	if err := db.Delete(formatKey, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = OpenStoreFS(mem, "/s", false)
	if err != nil {
		t.Fatalf("opening a store without a format mark: %v", err)
	}
	defer st.Close()
	if got := formatOf(t, st); got != strconv.Itoa(storeFormat) {
		t.Fatalf("an older store's format is %q after opening, want %d", got, storeFormat)
	}
}

func formatOf(t *testing.T, st *Store) string {
	t.Helper()
	v, closer, err := st.db.Get(formatKey)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return string(v)
}

func setFormat(t *testing.T, st *Store, v []byte) {
	t.Helper()
	if err := st.db.Set(formatKey, v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}
