package runtime

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"
)

// Checkpoints copy logged block values into the block files (blockfile.go).
// A checkpoint, one at a time:
//
//  1. takes a pebble snapshot: the w records it sees belong to batches
//     already applied;
//  2. syncs pebble's WAL (an empty synced record): those batches are now
//     durable, whether they were synced, lazy or still waiting for their
//     own fsync;
//  3. writes each block's newest value it sees into the block's slot;
//  4. fsyncs the block files;
//  5. deletes the w records it saw (point deletes: a record of a batch
//     applied after the snapshot stays for the next checkpoint), without a
//     sync: if the deletes are lost, reopening copies the same values
//     again.
//
// A crash before 4 completes leaves the w records, which reopening copies
// again (openStore replays before anything reads); after 4, the slots
// hold the values. A checkpoint runs when ckBytes of block values were
// logged since the last one, or ckDelay after the first of them, and
// before a block is read.
type ckConfig struct {
	bytes int64
	delay time.Duration
	// hook, if set, runs between the steps above ("synced", "written",
	// "fsynced", "deleted"); tests crash there.
	hook func(step string)
}

// Checkpoint defaults. A checkpoint costs a WAL sync (shared with
// concurrent batches' syncs) and an fsync of the block files; it must come
// well before the 64 MiB memtable fills, so that the logged values and
// their deletes meet in one memtable and a flush writes neither.
var defaultCk = ckConfig{bytes: 8 << 20, delay: 200 * time.Millisecond}

func (s *Store) kickCheckpoint() {
	select {
	case s.ckKick <- struct{}{}:
	default:
	}
}

// checkpointLoop runs checkpoints in the background until the store
// closes.
func (s *Store) checkpointLoop() {
	defer close(s.ckDone)
	t := time.NewTicker(s.ck.delay)
	defer t.Stop()
	for {
		select {
		case <-s.ckKick:
		case <-t.C:
			if s.blocks.pending.Load() == 0 {
				continue
			}
		case <-s.ckStop:
			return
		}
		if err := s.checkpoint(); err != nil {
			panic(fmt.Sprintf("runtime: block checkpoint: %v", err))
		}
	}
}

func (s *Store) ckStep(step string) {
	if s.ck.hook != nil {
		s.ck.hook(step)
	}
}

// checkpoint copies every block value logged by an applied batch into the
// block files, and deletes its log record.
func (s *Store) checkpoint() error {
	bf := s.blocks
	bf.ckMu.Lock()
	defer bf.ckMu.Unlock()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: wPrefix, UpperBound: prefixEnd(wPrefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	if !it.Last() {
		return it.Error()
	}
	if causes.on.Load() {
		countCause("block checkpoint")
	}
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return err
	}
	s.ckStep("synced")
	del := s.db.NewBatch()
	defer del.Close()
	written := map[blockRef]bool{}
	dirty := map[*blockFile]bool{}
	var logged int64
	// Newest first: a block's newest value is the one it keeps.
	for ; it.Valid(); it.Prev() {
		_ = del.Delete(it.Key(), nil)
		v := it.Value()
		r, err := decodeRef(v)
		if err != nil {
			return fmt.Errorf("log record %x: %w", it.Key(), err)
		}
		val := v[refLen:]
		logged += int64(len(val))
		if written[r] {
			continue
		}
		written[r] = true
		if len(val) != r.size {
			return fmt.Errorf("log record %x: %d bytes for a block of %d", it.Key(), len(val), r.size)
		}
		bf.mu.Lock()
		f, err := bf.file(r.size)
		bf.mu.Unlock()
		if err != nil {
			return err
		}
		if _, err := f.f.WriteAt(val, int64(r.slot)*int64(r.size)); err != nil {
			return err
		}
		dirty[f] = true
	}
	if err := it.Error(); err != nil {
		return err
	}
	s.ckStep("written")
	for f := range dirty {
		if err := f.f.SyncData(); err != nil {
			return err
		}
	}
	s.ckStep("fsynced")
	if err := s.db.Apply(del, pebble.NoSync); err != nil {
		return err
	}
	bf.pending.Add(-logged)
	s.ckStep("deleted")
	return nil
}
