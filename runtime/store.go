package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/amalgam-store/amalgam/node"
)

// Store is one machine's pebble database. It holds, for every node the
// machine hosts, the node's own state (node.Persistent) and the state of
// its ordered streams:
//
//	n\x00<addr>\x00<key>           the node's key (see data/, parity/, witness/ persist.go);
//	                               for a block (b/...) of 64 KiB or more a reference to its
//	                               slot in a block file (blockfile.go)
//	i\x00<addr>\x00<from>          incoming stream from <from>: stream id, last delivered seq
//	m\x00<addr>\x00<to>            outgoing stream to <to>: stream id, next seq
//	o\x00<addr>\x00<to>\x00<seq>   outgoing message not yet acknowledged (wire.Message)
//
// A handler batch's writes go into one pebble batch, committed with
// pebble.Sync when the store is durable, before the batch's messages are
// released; a lazy batch (lazysync.go) is committed without a sync and
// released once a later sync of the store covers it. Concurrent synced
// commits from different nodes share one WAL fsync (pebble's own group
// commit). Every store counts its syncs and bytes written
// (StoreDiskStats).
type Store struct {
	db     *pebble.DB
	sync   bool
	lazy   lazySyncs     // lazy batches (lazysync.go)
	blocks *blockFiles   // blocks, out of pebble (blockfile.go)
	rc     reclaimConfig // freeing the slots blocks left (blockfile_reclaim.go)
	rcMu   sync.Mutex    // one reclaim at a time
	rcStop chan struct{}
	rcDone chan struct{}
}

// memTableSize is a store's memtable. Most of what a batch writes (stream
// messages, held PREPAREs, pending operations) is deleted within
// milliseconds; in a large memtable it is deleted before a flush writes it
// to a table, and blocks overwritten meanwhile are flushed once. Pebble
// starts small and doubles up to it.
const memTableSize = 64 << 20

// OpenStore opens (creating if needed) the database in dir. sync says
// whether commits wait for fsync; a synced store raises the process's
// GOMAXPROCS unless the environment sets it (procs.go).
func OpenStore(dir string, sync bool) (*Store, error) { return OpenStoreFS(vfs.Default, dir, sync) }

// OpenStoreFS is OpenStore on the file system fs (tests crash a
// vfs.NewStrictMem).
func OpenStoreFS(fs vfs.FS, dir string, sync bool) (*Store, error) {
	return openStore(fs, dir, sync, lazyDelay)
}

// openStore is OpenStoreFS with the background syncer's delay (tests
// make it long, so that only the batches' own syncs count).
func openStore(fs vfs.FS, dir string, sync bool, delay time.Duration) (*Store, error) {
	return openStoreRc(fs, dir, sync, delay, defaultReclaim)
}

// openStoreRc is openStore with the block slots' reclaim configuration.
func openStoreRc(fs vfs.FS, dir string, sync bool, delay time.Duration, rc reclaimConfig) (*Store, error) {
	if err := makeDir(fs, dir); err != nil {
		return nil, fmt.Errorf("opening store %s: %w", dir, err)
	}
	if sync {
		procsForSyncs() // procs.go
	}
	blocks, err := openBlockFiles(countingFS{FS: fs}, dir)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", dir, err)
	}
	// Every write into pebble's WAL first syncs the blocks written before
	// it, so no reference reaches the disk before its block (blockfile.go).
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}, FS: countingFS{FS: fs, pre: blocks.syncBlocks}, MemTableSize: memTableSize})
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", dir, errors.Join(err, blocks.close()))
	}
	s := &Store{db: db, sync: sync, blocks: blocks, rc: rc, rcStop: make(chan struct{}), rcDone: make(chan struct{})}
	if err := s.checkFormat(); err != nil {
		return nil, fmt.Errorf("opening store %s: %w", dir, errors.Join(err, db.Close(), blocks.close()))
	}
	if err := s.indexBlocks(); err != nil {
		return nil, fmt.Errorf("opening store %s: %w", dir, errors.Join(err, db.Close(), blocks.close()))
	}
	s.lazy.init(delay)
	go s.syncLazily()
	go s.reclaimLoop()
	return s, nil
}

// makeDir creates dir and syncs its parents, so that a power loss cannot
// take the directory away with the store in it (pebble syncs only the
// store's own directory).
func makeDir(fs vfs.FS, dir string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for d := dir; ; {
		p := fs.PathDir(d)
		if p == d || p == "" {
			return nil
		}
		f, err := fs.OpenDir(p)
		if err != nil {
			return err
		}
		err = errors.Join(f.Sync(), f.Close())
		if err != nil {
			return err
		}
		d = p
	}
}

// Close stops the background syncer and reclaims, and closes the database
// and the block files.
func (s *Store) Close() error {
	close(s.lazy.stop)
	<-s.lazy.done
	close(s.rcStop)
	<-s.rcDone
	err := s.db.Close()
	return errors.Join(err, s.blocks.close())
}

func (s *Store) writeOpts() *pebble.WriteOptions {
	if s.sync {
		return pebble.Sync
	}
	return pebble.NoSync
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

func key(parts ...string) []byte {
	b := make([]byte, keyLen(parts...))
	fillKey(b, parts...)
	return b
}

// keyLen is the length of key(parts...).
func keyLen(parts ...string) int {
	n := len(parts) - 1
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// fillKey writes key(parts...) into b, which is keyLen(parts...) long.
func fillKey(b []byte, parts ...string) {
	i := 0
	for j, p := range parts {
		if j > 0 {
			b[i] = 0
			i++
		}
		i += copy(b[i:], p)
	}
}

func nodeKey(a node.Addr, k string) []byte { return key("n", string(a), k) }
func inKey(a, from node.Addr) []byte       { return key("i", string(a), string(from)) }
func outMetaKey(a, to node.Addr) []byte    { return key("m", string(a), string(to)) }

func pair(a, b uint64) []byte {
	out := binary.BigEndian.AppendUint64(nil, a)
	return binary.BigEndian.AppendUint64(out, b)
}

func unpair(v []byte) (uint64, uint64, error) {
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("bad record of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), nil
}

// prefixEnd is the first key after every key with the prefix.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// scan calls fn for every key with the prefix, in order.
func (s *Store) scan(prefix []byte, fn func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// nodeWriter writes a node's keys into a batch; large blocks go to the
// block files (blockfile.go). Keys and values are written in place into
// the batch (pebble's deferred operations), without a key of their own,
// and the node encodes its records into one buffer the writer lends it
// (node.EncFor): the batch copies every value.
type nodeWriter struct {
	s    *Store
	b    *pebble.Batch
	addr node.Addr
	enc  *node.Enc
	l    *loop // told of every key written (streamback.go); may be nil
}

// writer returns the writer of node a's keys into b, lending enc; l, if
// not nil, is told of every key written.
func (s *Store) writer(b *pebble.Batch, a node.Addr, enc *node.Enc, l *loop) nodeWriter {
	return nodeWriter{s, b, a, enc, l}
}

func (w nodeWriter) Put(k string, v []byte) {
	if w.l != nil {
		w.l.touched(w.b, k)
	}
	if isBlock(k) && inFile(len(v)) {
		w.s.putBlock(w.b, w.addr, k, v)
		return
	}
	op := w.b.SetDeferred(keyLen("n", string(w.addr), k), len(v))
	fillKey(op.Key, "n", string(w.addr), k)
	copy(op.Value, v)
	_ = op.Finish()
}

func (w nodeWriter) Delete(k string) {
	if w.l != nil {
		w.l.touched(w.b, k)
	}
	if mayRef(k) {
		w.s.blocks.drop(w.addr, k)
	}
	op := w.b.DeleteDeferred(keyLen("n", string(w.addr), k))
	fillKey(op.Key, "n", string(w.addr), k)
	_ = op.Finish()
}

// Link implements node.Linker: a block in a block file is linked by its
// reference (blockfile.go); a block kept in pebble is not linked.
func (w nodeWriter) Link(dst, src string) bool {
	if !isLink(dst) || !isBlock(src) {
		return false
	}
	ref, ok := w.s.blocks.link(w.addr, dst, src)
	if !ok {
		return false
	}
	if w.l != nil {
		w.l.touched(w.b, dst)
	}
	_ = w.b.Set(nodeKey(w.addr, dst), ref, nil)
	return true
}

// LendEnc implements node.EncLender.
func (w nodeWriter) LendEnc() *node.Enc { return w.enc }

// nodeReader reads a node's keys.
type nodeReader struct {
	s    *Store
	addr node.Addr
}

func (r nodeReader) Get(k string) ([]byte, bool, error) {
	v, c, err := r.s.db.Get(nodeKey(r.addr, k))
	if err == pebble.ErrNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer c.Close()
	if mayRef(k) && isRef(v) {
		v, err := r.s.readBlock(v)
		return v, err == nil, err
	}
	return bytes.Clone(v), true, nil
}

func (r nodeReader) Scan(prefix string, fn func(string, []byte) error) error {
	base := len(nodeKey(r.addr, ""))
	return r.s.scan(nodeKey(r.addr, prefix), func(k, v []byte) error {
		nk := string(k[base:])
		if mayRef(nk) && isRef(v) {
			b, err := r.s.readBlock(v)
			if err != nil {
				return fmt.Errorf("%s: %w", nk, err)
			}
			v = b
		}
		return fn(nk, v)
	})
}

// hasNode reports whether anything is stored for the node.
func (s *Store) hasNode(a node.Addr) (bool, error) {
	found := false
	err := s.scan(nodeKey(a, ""), func([]byte, []byte) error { found = true; return errStop })
	if err == errStop {
		err = nil
	}
	return found, err
}

var errStop = fmt.Errorf("stop")
