package runtime

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/vfs"
)

// DiskStats counts what every Store of the process asked of the disk:
// syncs (fsync and fdatasync of files and directories, including
// pebble's WAL, flushes and compactions) and bytes written to files.
type DiskStats struct {
	Syncs        uint64
	BytesWritten uint64
}

var diskSyncs, diskBytes atomic.Uint64

// StoreDiskStats returns the counts since the process started.
func StoreDiskStats() DiskStats {
	return DiskStats{Syncs: diskSyncs.Load(), BytesWritten: diskBytes.Load()}
}

// countingFS is a vfs.FS whose files count syncs and bytes written.
// beforeSync, if set, runs before every sync (tests slow syncs down).
type countingFS struct {
	vfs.FS
	beforeSync func()
}

func (fs countingFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return &countingFile{f, fs.beforeSync}, nil
}

func (fs countingFS) Create(name string) (vfs.File, error) { return fs.wrap(fs.FS.Create(name)) }
func (fs countingFS) Open(name string, o ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.Open(name, o...))
}
func (fs countingFS) OpenReadWrite(name string, o ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, o...))
}
func (fs countingFS) OpenDir(name string) (vfs.File, error) { return fs.wrap(fs.FS.OpenDir(name)) }
func (fs countingFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname))
}

type countingFile struct {
	vfs.File
	beforeSync func()
}

func (f *countingFile) synced() {
	diskSyncs.Add(1)
	if f.beforeSync != nil {
		f.beforeSync()
	}
}

func (f *countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	diskBytes.Add(uint64(n))
	return n, err
}

func (f *countingFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	diskBytes.Add(uint64(n))
	return n, err
}

func (f *countingFile) Sync() error {
	f.synced()
	return f.File.Sync()
}

func (f *countingFile) SyncData() error {
	f.synced()
	return f.File.SyncData()
}

// SyncTo counts only when it synced the file (on Linux it starts
// writeback without waiting and reports no full sync).
func (f *countingFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if full {
		diskSyncs.Add(1)
	}
	return full, err
}
