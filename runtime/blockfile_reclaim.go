package runtime

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble"
)

// Reclaiming the slots no key names any more (blockfile.go). Such a slot
// is free once no durable reference names it. A reclaim, one at a time:
//
//  1. takes the queue of slots no key names;
//  2. takes a pebble snapshot: every batch it shows is applied;
//  3. syncs pebble's WAL (an empty synced record, shared with concurrent
//     batches' syncs): every batch the snapshot shows is now durable;
//  4. frees each slot that no key that named it names in the snapshot and
//     that no key names again since; the others (their batch was not
//     applied yet) go back to the queue.
//
// Slots are freed in memory only; reopening the store frees every slot no
// stored reference names.
type reclaimConfig struct {
	every time.Duration // how often a reclaim runs while slots wait
}

// defaultReclaim: each reclaim costs a WAL sync and, with blocks written
// since, an fsync of the block files; once a second keeps that small
// (every 100 ms measured 0.1-0.3 more syncs per write), and a file holds
// about a second of writes more in slots waiting.
var defaultReclaim = reclaimConfig{every: time.Second}

// reclaimLoop reclaims in the background until the store closes.
func (s *Store) reclaimLoop() {
	defer close(s.rcDone)
	tickUntil(s.rc.every, s.rcStop, func() {
		if err := s.reclaim(); err != nil {
			panic(fmt.Sprintf("runtime: reclaiming block slots: %v", err))
		}
	})
}

// reclaim frees the slots blocks left whose switch away is durable.
func (s *Store) reclaim() error {
	bf := s.blocks
	s.rcMu.Lock()
	defer s.rcMu.Unlock()
	bf.mu.Lock()
	q := bf.freing
	bf.freing = nil
	bf.mu.Unlock()
	if len(q) == 0 {
		return nil
	}
	snap := s.db.NewSnapshot()
	defer snap.Close()
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return err
	}
	refs, err := refsIn(snap, q)
	if err != nil {
		return err
	}
	var keep []freeing
	for _, fr := range q {
		if namedIn(refs, fr) {
			keep = append(keep, fr)
			continue
		}
		bf.mu.Lock()
		if f := bf.files[fr.ref.size]; f.uses[fr.ref.slot] == nil { // else named again: queued when it is not
			f.free = append(f.free, fr.ref.slot)
		}
		bf.mu.Unlock()
	}
	bf.mu.Lock()
	bf.freing = append(keep, bf.freing...)
	bf.mu.Unlock()
	return nil
}

// refsIn reads, in the snapshot, the references that the keys which
// named the queued slots hold, by key id. The keys are sought in order with
// one iterator, so that neighbouring keys share the table blocks read.
func refsIn(snap *pebble.Snapshot, q []freeing) (map[string]blockRef, error) {
	var ids []string
	for _, fr := range q {
		ids = append(ids, fr.ids...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	it, err := snap.NewIter(nil)
	if err != nil {
		return nil, err
	}
	refs := make(map[string]blockRef, len(ids))
	for _, id := range ids {
		k := key("n", id)
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
			if err := it.Error(); err != nil { // not an absent key: keep every slot
				_ = it.Close()
				return nil, err
			}
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		if isRef(v) {
			if r, err := decodeRef(v); err == nil {
				refs[id] = r
			}
		}
	}
	return refs, it.Close()
}

// namedIn reports whether a key that named fr's slot still names it in
// refs.
func namedIn(refs map[string]blockRef, fr freeing) bool {
	for _, id := range fr.ids {
		if r, ok := refs[id]; ok && r == fr.ref {
			return true
		}
	}
	return false
}
