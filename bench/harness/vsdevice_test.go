package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDeviceWritten reads sectors written, the seventh field of a block
// device's stat file, as bytes, and refuses a short file.
func TestDeviceWritten(t *testing.T) {
	dir := t.TempDir()
	stat := filepath.Join(dir, "stat")
	if err := os.WriteFile(stat, []byte("   13142     1702  1047350    4632   338745   361640 24170776  1049834        0   609108  1069044\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := deviceWritten(stat)
	if err != nil || n != 24170776*512 {
		t.Fatalf("deviceWritten = %d, %v; want %d", n, err, 24170776*512)
	}
	if err := os.WriteFile(stat, []byte("1 2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := deviceWritten(stat); err == nil {
		t.Fatal("a stat file of 3 fields was read")
	}
}

// TestDeviceStatCountsWrites: where the test's directory is on a block
// device, its count grows by at least what a synced file wrote there.
func TestDeviceStatCountsWrites(t *testing.T) {
	dir := t.TempDir()
	stat := deviceStat(dir)
	if stat == "" {
		t.Logf("%s is on no block device here (tmpfs or overlay): nothing to count", dir)
		return
	}
	before, err := deviceWritten(stat)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	if _, err := f.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	after, err := deviceWritten(stat)
	if err != nil {
		t.Fatal(err)
	}
	if after-before < size {
		t.Fatalf("%s grew by %d bytes after a synced write of %d", stat, after-before, size)
	}
}
