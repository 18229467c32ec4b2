package raftreconfig

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// disk is a replica's Raft state in pebble:
//
//	h            the hard state (raftpb.HardState)
//	s            the newest snapshot (raftpb.Snapshot; its data is a wire.ReconfigSnapshot)
//	e<index>     log entries (raftpb.Entry), index big-endian
//	init         fingerprint of the initial state the replica was started with
//
// Each Ready's hard state, entries and snapshot are written in one synced
// batch before its messages are sent (the Ready contract). raft's
// MemoryStorage serves reads; on start it is filled from here.
type disk struct {
	db   *pebble.DB
	sync bool
}

var (
	hardKey = []byte("h")
	snapKey = []byte("s")
	initKey = []byte("init")
)

func entryKey(i uint64) []byte { return binary.BigEndian.AppendUint64([]byte("e"), i) }

var entriesEnd = []byte("f")

func openDisk(dir string, sync bool) (*disk, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("opening raft store %s: %w", dir, err)
	}
	return &disk{db: db, sync: sync}, nil
}

func (d *disk) close() error { return d.db.Close() }

func (d *disk) opts() *pebble.WriteOptions {
	if d.sync {
		return pebble.Sync
	}
	return pebble.NoSync
}

// save makes a Ready's state durable.
func (d *disk) save(hs pb.HardState, ents []pb.Entry, snap pb.Snapshot) error {
	b := d.db.NewBatch()
	defer b.Close()
	if !raft.IsEmptySnap(snap) {
		v, err := snap.Marshal()
		if err != nil {
			return err
		}
		if err := b.Set(snapKey, v, nil); err != nil {
			return err
		}
		if err := b.DeleteRange(entryKey(0), entryKey(snap.Metadata.Index+1), nil); err != nil {
			return err
		}
	}
	if len(ents) > 0 {
		// Entries from ents[0].Index on replace whatever the log held there.
		if err := b.DeleteRange(entryKey(ents[0].Index), entriesEnd, nil); err != nil {
			return err
		}
		for i := range ents {
			v, err := ents[i].Marshal()
			if err != nil {
				return err
			}
			if err := b.Set(entryKey(ents[i].Index), v, nil); err != nil {
				return err
			}
		}
	}
	if !raft.IsEmptyHardState(hs) {
		v, err := hs.Marshal()
		if err != nil {
			return err
		}
		if err := b.Set(hardKey, v, nil); err != nil {
			return err
		}
	}
	if b.Empty() {
		return nil
	}
	return b.Commit(d.opts())
}

// saveSnapshot stores a snapshot the replica took and drops the entries it
// covers up to compact.
func (d *disk) saveSnapshot(snap pb.Snapshot, compact uint64) error {
	v, err := snap.Marshal()
	if err != nil {
		return err
	}
	b := d.db.NewBatch()
	defer b.Close()
	if err := b.Set(snapKey, v, nil); err != nil {
		return err
	}
	if err := b.DeleteRange(entryKey(0), entryKey(compact+1), nil); err != nil {
		return err
	}
	return b.Commit(d.opts())
}

// load reads everything back.
func (d *disk) load() (hs pb.HardState, snap pb.Snapshot, ents []pb.Entry, err error) {
	if v, ok, err := d.get(hardKey); err != nil {
		return hs, snap, nil, err
	} else if ok {
		if err := hs.Unmarshal(v); err != nil {
			return hs, snap, nil, fmt.Errorf("hard state: %w", err)
		}
	}
	if v, ok, err := d.get(snapKey); err != nil {
		return hs, snap, nil, err
	} else if ok {
		if err := snap.Unmarshal(v); err != nil {
			return hs, snap, nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: entryKey(0), UpperBound: entriesEnd})
	if err != nil {
		return hs, snap, nil, err
	}
	for it.First(); it.Valid(); it.Next() {
		var e pb.Entry
		if err := e.Unmarshal(it.Value()); err != nil {
			_ = it.Close()
			return hs, snap, nil, fmt.Errorf("entry: %w", err)
		}
		if e.Index > snap.Metadata.Index {
			ents = append(ents, e)
		}
	}
	return hs, snap, ents, it.Close()
}

func (d *disk) get(k []byte) ([]byte, bool, error) {
	v, c, err := d.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer c.Close()
	return append([]byte(nil), v...), true, nil
}

func (d *disk) set(k, v []byte) error { return d.db.Set(k, v, pebble.Sync) }

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
