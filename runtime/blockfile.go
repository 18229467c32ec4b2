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
// do not live in pebble: each block has a fixed slot in a file of the
// store's directory, one file per block size (blocks-<size>.dat), and is
// overwritten there in place. Pebble keeps, under the node's key, a 12-byte
// reference to the slot (size, slot number), and the write-ahead log of
// block values not yet in the file:
//
//	w\x00<seq>   reference, then the block's new value
//
// A batch that writes a block puts the reference and the w record into its
// pebble batch, so the block is durable and atomic with the rest of the
// batch at the batch's sync, as any other key. A checkpoint (checkpoint.go)
// later copies the logged values into their slots, fsyncs the block files,
// and only then deletes the w records it copied; reopening the store first
// replays whatever w records are left. So an in-place write that a crash
// tears is always written again from its log record, and a block read back
// after a restart is the value of the last durable batch that wrote it:
// never a mix of old and new.
//
// Slots are assigned once per (node, block, size) for the life of the
// store's process and never reassigned meanwhile (a block deleted or wiped
// keeps its slot until the store reopens), so a w record left in the log
// always names a slot that still belongs to its block, or to no block.
// Reopening frees every slot no reference names.
const blockPrefix = "b/"

// refLen is the length of a block reference: size, then slot.
const refLen = 12

var wPrefix = []byte("w\x00")

func wKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), wPrefix...), seq)
}

// blockRef names a block's slot.
type blockRef struct {
	size int
	slot uint64
}

func (r blockRef) encode(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(r.size))
	return binary.BigEndian.AppendUint64(b, r.slot)
}

func decodeRef(v []byte) (blockRef, error) {
	if len(v) < refLen {
		return blockRef{}, fmt.Errorf("bad block reference of %d bytes (a store written before block files?)", len(v))
	}
	r := blockRef{size: int(binary.BigEndian.Uint32(v)), slot: binary.BigEndian.Uint64(v[4:])}
	if r.size == 0 {
		return blockRef{}, errors.New("bad block reference: size 0")
	}
	return r, nil
}

// blockFiles are a store's block files and slot assignments.
type blockFiles struct {
	fs  vfs.FS
	dir string

	mu    sync.Mutex
	files map[int]*blockFile // by block size

	seq     atomic.Uint64 // the last w record's sequence number
	pending atomic.Int64  // bytes logged since the last checkpoint
	ckMu    sync.Mutex    // one checkpoint at a time
}

// blockFile holds the blocks of one size.
type blockFile struct {
	size  int
	f     vfs.File
	slots map[string]uint64 // "<addr>\x00<key>" -> slot
	free  []uint64          // slots no block has (found at open)
	next  uint64            // slots below it exist or are free
	alloc int64             // bytes preallocated
}

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
			return nil, err
		}
	}
	return bf, nil
}

// file returns the file of blocks of the size, creating it (and syncing
// the directory that names it) if needed.
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
	b := &blockFile{size: size, f: f, slots: map[string]uint64{}, next: n, alloc: int64(n) * int64(size)}
	bf.files[size] = b
	return b, nil
}

// slot returns the slot of node a's block k of the size, assigning one if
// it has none.
func (bf *blockFiles) slot(a node.Addr, k string, size int) (blockRef, error) {
	bf.mu.Lock()
	defer bf.mu.Unlock()
	f, err := bf.file(size)
	if err != nil {
		return blockRef{}, err
	}
	id := string(a) + "\x00" + k
	s, ok := f.slots[id]
	if !ok {
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
		f.slots[id] = s
	}
	return blockRef{size, s}, nil
}

// put writes node a's block k into the batch: its reference under the
// node's key and its value in the write-ahead log.
func (s *Store) putBlock(b *pebble.Batch, a node.Addr, k string, v []byte) {
	ref, err := s.blocks.slot(a, k, len(v))
	if err != nil {
		panic(fmt.Sprintf("runtime: %s: block file: %v", a, err))
	}
	_ = b.Set(nodeKey(a, k), ref.encode(nil), nil)
	wk := wKey(s.blocks.seq.Add(1))
	op := b.SetDeferred(len(wk), refLen+len(v))
	copy(op.Key, wk)
	ref.encode(op.Value[:0])
	copy(op.Value[refLen:], v)
	_ = op.Finish()
	if s.blocks.pending.Add(int64(len(v))) >= s.ck.bytes {
		s.kickCheckpoint()
	}
	if causes.on.Load() {
		countCause("block logged")
	}
}

// readBlock reads the block a reference names, after a checkpoint has
// copied every logged value into the files.
func (s *Store) readBlock(ref []byte) ([]byte, error) {
	r, err := decodeRef(ref)
	if err != nil {
		return nil, err
	}
	if err := s.checkpoint(); err != nil {
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

// isBlock reports whether a node's key is a block's.
func isBlock(k string) bool { return strings.HasPrefix(k, blockPrefix) }

// indexBlocks marks the slots the stored references name as taken, and
// the other slots of each file as free. Run at open, after the replay.
func (s *Store) indexBlocks() error {
	bf := s.blocks
	err := s.scan([]byte("n\x00"), func(k, v []byte) error {
		rest := k[2:]
		i := strings.IndexByte(string(rest), 0)
		if i < 0 || !isBlock(string(rest[i+1:])) {
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
		f.slots[string(rest)] = r.slot
		f.next = max(f.next, r.slot+1)
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range bf.files {
		taken := make([]bool, f.next)
		for _, sl := range f.slots {
			taken[sl] = true
		}
		for sl := f.next; sl > 0; sl-- {
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

// openBlocks opens the store's block files, copies into them the block
// values a crash left in the log, and indexes the slots.
func (s *Store) openBlocks(fs vfs.FS, dir string) error {
	bf, err := openBlockFiles(countingFS{FS: fs}, dir)
	if err != nil {
		return err
	}
	s.blocks = bf
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: wPrefix, UpperBound: prefixEnd(wPrefix)})
	if err != nil {
		return err
	}
	if it.Last() {
		bf.seq.Store(binary.BigEndian.Uint64(it.Key()[len(wPrefix):]))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	// The replay's deletes are synced before any slot is reused.
	if err := errors.Join(s.checkpoint(), s.db.LogData(nil, pebble.Sync)); err != nil {
		return err
	}
	return s.indexBlocks()
}
