package runtime

import (
	goruntime "runtime"
	"testing"
)

func TestSyncProcs(t *testing.T) {
	for _, c := range []struct{ n, want int }{{1, 2}, {2, 4}, {4, 8}, {16, 20}} {
		if got := SyncProcs(c.n); got != c.want {
			t.Errorf("SyncProcs(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// A synced store raises GOMAXPROCS; an unsynced one, or GOMAXPROCS in
// the environment, leaves it alone.
func TestStoreRaisesProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(DefaultProcs()))
	s, err := OpenStore(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if got := goruntime.GOMAXPROCS(0); got != DefaultProcs() {
		t.Fatalf("an unsynced store set GOMAXPROCS to %d, want %d", got, DefaultProcs())
	}
	s, err = OpenStore(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if got, want := goruntime.GOMAXPROCS(0), SyncProcs(DefaultProcs()); got != want {
		t.Fatalf("a synced store left GOMAXPROCS at %d, want %d", got, want)
	}
	goruntime.GOMAXPROCS(DefaultProcs())
	t.Setenv("GOMAXPROCS", "1")
	s, err = OpenStore(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if got := goruntime.GOMAXPROCS(0); got != DefaultProcs() {
		t.Fatalf("with GOMAXPROCS in the environment a synced store set it to %d, want %d", got, DefaultProcs())
	}
}
