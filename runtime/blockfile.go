package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/amalgam-store/amalgam/node"
)

// Block files. A node's blocks (its keys under blockPrefix, msg.PersistBlocks)
// do not go through pebble: they live in fixed-size slots of a file in the
// store's directory, one file per block size (blocks-<size>.dat), and
// pebble keeps, under the node's key, a 12-byte reference to the slot
// (size, slot number). Writing a block is copy-on-write:
//
//  1. the new value is written (pwrite) into a free slot, one no durable
//     reference names;
//  2. the batch sets the block's reference to that slot;
//  3. before pebble writes anything into its WAL file, the block files
//     written since their last sync are fsynced (countingFS's pre hook,
//     syncBlocks). A WAL page can reach the disk before pebble syncs it
//     (the kernel writes dirty pages back when it likes: under memory
//     pressure, once they are old enough, at any process's sync(2)), so
//     the order must hold at the write, not only at the sync. Tables and
//     the manifest hold only references that were in the WAL first.
//
// So a reference is on disk only after the value it names is durable, and
// a batch is atomic and durable at its WAL sync as before. The slot a block had
// before is freed once the switch away from it is durable (reclaim,
// blockfile_reclaim.go); until then nothing writes it. A torn write can
// only damage a slot that no durable reference names: after a crash every
// block reads back as the value of the last durable batch that wrote it,
// never a mix. Reopening takes the slots the stored references name and
// frees the rest; there is nothing to replay.
//
// A node's links (node.Linker, keys under node.LinkPrefix) are references
// too: Link copies the reference a block key holds, so two keys may name
// one slot, and a slot is freed only when no key names it any more and
// every key's switch away from it is durable.
const blockPrefix = "b/"

// refLen is the length of a block reference: size, then slot.
const refLen = 12

// blockRef names a block's slot.
type blockRef struct {
	size int
	slot uint64
}

func (r blockRef) encode() []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, refLen), uint32(r.size))
	return binary.BigEndian.AppendUint64(b, r.slot)
}

func decodeRef(v []byte) (blockRef, error) {
	if len(v) != refLen {
		return blockRef{}, fmt.Errorf("bad block reference of %d bytes (a store written before block files?)", len(v))
	}
	r := blockRef{size: int(binary.BigEndian.Uint32(v)), slot: binary.BigEndian.Uint64(v[4:])}
	if r.size == 0 {
		return blockRef{}, errors.New("bad block reference: size 0")
	}
	return r, nil
}

// isBlock reports whether a node's key is a block's.
func isBlock(k string) bool { return strings.HasPrefix(k, blockPrefix) }

// isLink reports whether a node's key is a link's (node.Linker).
func isLink(k string) bool { return strings.HasPrefix(k, node.LinkPrefix) }

// mayRef reports whether a node's key may hold a reference.
func mayRef(k string) bool { return isBlock(k) || isLink(k) }

// minFileBlock is the smallest block kept in a block file; smaller blocks
// stay in pebble as values. A block file costs an fsync before each WAL
// sync that covers block writes; measured, that paid at 128 KiB (less
// CPU and disk than the LSM's flushes and compactions) and not at 4 KiB
// (the same bytes, 1.8x the syncs). Blocks of refLen bytes always go to a
// file, so that a stored value of refLen bytes is always a reference.
var minFileBlock = 64 << 10

func inFile(size int) bool { return size >= minFileBlock || size == refLen }

// isRef reports whether a block's stored value is a reference.
func isRef(v []byte) bool { return len(v) == refLen }

// blockFiles are a store's block files and slot assignments.
type blockFiles struct {
	fs  vfs.FS
	dir string

	mu     sync.Mutex
	files  map[int]*blockFile // by block size
	freing []freeing          // slots to free once the switch away is durable

	written atomic.Uint64 // block writes so far
	syncMu  sync.Mutex
	synced  uint64 // block writes the last sync of the files covered
}

// freeing is a slot no key names any more; it is free once no stored
// reference of the keys that named it names it.
type freeing struct {
	ids []string // the keys that named it, as "<addr>\x00<key>"
	ref blockRef
}

// blockFile holds the blocks of one size.
type blockFile struct {
	size  int
	f     vfs.File
	slots map[string]uint64   // "<addr>\x00<key>" -> the slot the key names
	uses  map[uint64]*slotUse // the slots keys name
	free  []uint64
	next  uint64 // slots below it exist or are free
	alloc int64  // bytes preallocated
}

// slotUse is how many keys name a slot, and every key that named it since
// it was taken.
type slotUse struct {
	n   int
	ids []string
}

// name makes key id name slot s.
func (f *blockFile) name(id string, s uint64) {
	u := f.uses[s]
	if u == nil {
		u = &slotUse{}
		f.uses[s] = u
	}
	u.n++
	u.ids = append(u.ids, id)
	f.slots[id] = s
}

// unname makes key id name no slot of f; a slot no key names any more
// goes to the queue for freeing.
func (bf *blockFiles) unname(f *blockFile, id string) {
	s, ok := f.slots[id]
	if !ok {
		return
	}
	delete(f.slots, id)
	u := f.uses[s]
	if u.n--; u.n == 0 {
		delete(f.uses, s)
		bf.freing = append(bf.freing, freeing{u.ids, blockRef{f.size, s}})
	}
}

func slotID(a node.Addr, k string) string { return string(a) + "\x00" + k }

// growBy is how much a block file grows at a time (at least one slot).
const growBy = 64 << 20

func blockFileName(size int) string { return fmt.Sprintf("blocks-%d.dat", size) }

// openBlockFiles opens the block files in dir.
func openBlockFiles(fs vfs.FS, dir string) (*blockFiles, error) {
	bf := &blockFiles{fs: fs, dir: dir, files: map[int]*blockFile{}}
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		s, ok := strings.CutPrefix(n, "blocks-")
		if !ok {
			continue
		}
		s, ok = strings.CutSuffix(s, ".dat")
		size, err := strconv.Atoi(s)
		if !ok || err != nil || size <= 0 {
			continue
		}
		if _, err := bf.file(size); err != nil {
			return nil, errors.Join(err, bf.close())
		}
	}
	return bf, nil
}

// file returns the file of blocks of the size, creating it (and syncing
// the directory that names it) if needed. The caller holds bf.mu or is
// alone.
func (bf *blockFiles) file(size int) (*blockFile, error) {
	if f := bf.files[size]; f != nil {
		return f, nil
	}
	name := bf.fs.PathJoin(bf.dir, blockFileName(size))
	_, statErr := bf.fs.Stat(name)
	f, err := bf.fs.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	if statErr != nil { // created: its directory entry must survive a crash
		d, err := bf.fs.OpenDir(bf.dir)
		if err == nil {
			err = errors.Join(d.Sync(), d.Close())
		}
		if err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	n := uint64(fi.Size()) / uint64(size)
	b := &blockFile{size: size, f: f, slots: map[string]uint64{}, uses: map[uint64]*slotUse{}, next: n, alloc: int64(n) * int64(size)}
	bf.files[size] = b
	return b, nil
}

// take gives node a's block k of the size a free slot, and queues the
// slot it had for freeing.
func (bf *blockFiles) take(a node.Addr, k string, size int) (*blockFile, blockRef, error) {
	bf.mu.Lock()
	defer bf.mu.Unlock()
	f, err := bf.file(size)
	if err != nil {
		return nil, blockRef{}, err
	}
	var s uint64
	if n := len(f.free); n > 0 {
		s, f.free = f.free[n-1], f.free[:n-1]
	} else {
		s = f.next
		f.next++
		if end := int64(f.next) * int64(size); end > f.alloc {
			grow := max(int64(growBy), int64(size))
			_ = f.f.Preallocate(f.alloc, grow) // only a hint
			f.alloc += grow
		}
	}
	id := slotID(a, k)
	for _, g := range bf.files {
		bf.unname(g, id)
	}
	f.name(id, s)
	return f, blockRef{size, s}, nil
}

// link makes node a's key dst name the slot its key src names, if src
// names one, and returns the reference.
func (bf *blockFiles) link(a node.Addr, dst, src string) ([]byte, bool) {
	bf.mu.Lock()
	defer bf.mu.Unlock()
	sid, did := slotID(a, src), slotID(a, dst)
	for _, f := range bf.files {
		s, ok := f.slots[sid]
		if !ok {
			continue
		}
		if d, ok := f.slots[did]; !ok || d != s {
			for _, g := range bf.files {
				bf.unname(g, did)
			}
			f.name(did, s)
		}
		return blockRef{f.size, s}.encode(), true
	}
	return nil, false
}

// drop makes node a's key k name no slot.
func (bf *blockFiles) drop(a node.Addr, k string) {
	bf.mu.Lock()
	defer bf.mu.Unlock()
	for _, f := range bf.files {
		bf.unname(f, slotID(a, k))
	}
}

// putBlock writes node a's block k into a free slot and its reference
// into the batch.
func (s *Store) putBlock(b *pebble.Batch, a node.Addr, k string, v []byte) {
	f, ref, err := s.blocks.take(a, k, len(v))
	if err == nil {
		_, err = f.f.WriteAt(v, int64(ref.slot)*int64(ref.size))
	}
	if err != nil {
		panic(fmt.Sprintf("runtime: %s: writing block %s: %v", a, k, err))
	}
	s.blocks.written.Add(1)
	_ = b.Set(nodeKey(a, k), ref.encode(), nil)
}

// syncBlocks fsyncs the block files if blocks were written since their
// last sync. Every write into a pebble WAL file runs it first
// (countingFS.pre).
func (bf *blockFiles) syncBlocks() error {
	w := bf.written.Load()
	bf.syncMu.Lock()
	defer bf.syncMu.Unlock()
	if w <= bf.synced {
		return nil
	}
	bf.mu.Lock()
	files := make([]vfs.File, 0, len(bf.files))
	for _, f := range bf.files {
		files = append(files, f.f)
	}
	bf.mu.Unlock()
	for _, f := range files {
		if err := f.SyncData(); err != nil {
			return err
		}
	}
	bf.synced = w
	return nil
}

// readBlock reads the block a reference names.
func (s *Store) readBlock(ref []byte) ([]byte, error) {
	r, err := decodeRef(ref)
	if err != nil {
		return nil, err
	}
	s.blocks.mu.Lock()
	f := s.blocks.files[r.size]
	s.blocks.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("block slot %d of size %d: no such block file", r.slot, r.size)
	}
	v := make([]byte, r.size)
	if _, err := f.f.ReadAt(v, int64(r.slot)*int64(r.size)); err != nil {
		return nil, fmt.Errorf("reading block slot %d of size %d: %w", r.slot, r.size, err)
	}
	return v, nil
}

// indexBlocks takes the slots the stored references name and frees the
// other slots of each file. Run at open.
func (s *Store) indexBlocks() error {
	bf := s.blocks
	err := s.scan([]byte("n\x00"), func(k, v []byte) error {
		rest := k[2:]
		i := strings.IndexByte(string(rest), 0)
		if i < 0 || !mayRef(string(rest[i+1:])) || !isRef(v) {
			return nil
		}
		r, err := decodeRef(v)
		if err != nil {
			return fmt.Errorf("node %s key %s: %w", rest[:i], rest[i+1:], err)
		}
		f, err := bf.file(r.size)
		if err != nil {
			return err
		}
		f.name(string(rest), r.slot)
		f.next = max(f.next, r.slot+1)
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range bf.files {
		taken := make([]bool, f.next)
		for sl := range f.uses {
			taken[sl] = true
		}
		for sl := f.next; sl > 0; sl-- { // the lowest slot is taken first
			if !taken[sl-1] {
				f.free = append(f.free, sl-1)
			}
		}
	}
	return nil
}

func (bf *blockFiles) close() error {
	var errs []error
	for _, f := range bf.files {
		errs = append(errs, f.f.Close())
	}
	return errors.Join(errs...)
}
