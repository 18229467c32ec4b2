package runtime

import (
	"path/filepath"
	"strings"
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
// beforeSync, if set, runs before every sync (tests slow syncs down); pre,
// if set, runs before every write to a WAL file and fails the write if it
// fails (a store syncs its block files there).
type countingFS struct {
	vfs.FS
	beforeSync func()
	pre        func() error
}

func (fs countingFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	kind := fileKind(name)
	pre := fs.pre
	if kind != "wal" {
		pre = nil // only a WAL write can carry a block reference
	}
	return &countingFile{f, fs.beforeSync, pre, kind}, nil
}

func (fs countingFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}
func (fs countingFS) Open(name string, o ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, o...)
	return fs.wrap(name, f, err)
}
func (fs countingFS) OpenReadWrite(name string, o ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, o...)
	return fs.wrap(name, f, err)
}
func (fs countingFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	return fs.wrap(name+"/", f, err)
}
func (fs countingFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f, err)
}

type countingFile struct {
	vfs.File
	beforeSync func()
	pre        func() error // before every write (WAL files only)
	kind       string       // for the sync causes: "wal", "table", "manifest", "blocks", "dir" or "other"
}

// fileKind names what a store's file is, from its name.
func fileKind(name string) string {
	base := filepath.Base(name)
	switch {
	case strings.HasSuffix(name, "/"):
		return "dir"
	case strings.HasSuffix(base, ".log"):
		return "wal"
	case strings.HasSuffix(base, ".sst"):
		return "table"
	case strings.HasPrefix(base, "MANIFEST"):
		return "manifest"
	case strings.HasPrefix(base, "blocks-"):
		return "blocks"
	}
	return "other"
}

func (f *countingFile) synced() {
	diskSyncs.Add(1)
	if causes.on.Load() {
		countCause("fsync " + f.kind)
	}
	if f.beforeSync != nil {
		f.beforeSync()
	}
}

func (f *countingFile) Write(p []byte) (int, error) {
	if err := f.beforeWrite(); err != nil {
		return 0, err
	}
	n, err := f.File.Write(p)
	diskBytes.Add(uint64(n))
	return n, err
}

func (f *countingFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.beforeWrite(); err != nil {
		return 0, err
	}
	n, err := f.File.WriteAt(p, off)
	diskBytes.Add(uint64(n))
	return n, err
}

// beforeWrite runs the pre hook, if the file has one.
func (f *countingFile) beforeWrite() error {
	if f.pre == nil {
		return nil
	}
	return f.pre()
}

func (f *countingFile) Sync() error {
	f.synced()
	return f.File.Sync()
}

func (f *countingFile) SyncData() error {
	f.synced()
	t := stageNow()
	err := f.File.SyncData()
	if !t.IsZero() {
		stageSince("fsync "+f.kind, t)
	}
	return err
}

// SyncTo counts only when it synced the file (on Linux it starts
// writeback without waiting and reports no full sync).
func (f *countingFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if full {
		diskSyncs.Add(1)
		if causes.on.Load() {
			countCause("fsync " + f.kind)
		}
	}
	return full, err
}
