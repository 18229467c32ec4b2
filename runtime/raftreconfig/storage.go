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
		if err := putSnapshot(b, snap, snap.Metadata.Index); err != nil {
			return err
		}
	}
	if len(ents) > 0 {
		// Entries from ents[0].Index on replace whatever the log held there.
		if err := b.DeleteRange(entryKey(ents[0].Index), entriesEnd, nil); err != nil {
			return err
		}
		for i := range ents {
			if err := put(b, entryKey(ents[i].Index), &ents[i]); err != nil {
				return err
			}
		}
	}
	if !raft.IsEmptyHardState(hs) {
		if err := put(b, hardKey, &hs); err != nil {
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
	b := d.db.NewBatch()
	defer b.Close()
	if err := putSnapshot(b, snap, compact); err != nil {
		return err
	}
	return b.Commit(d.opts())
}

// putSnapshot adds snap to b and drops the log entries up to upto.
func putSnapshot(b *pebble.Batch, snap pb.Snapshot, upto uint64) error {
	if err := put(b, snapKey, &snap); err != nil {
		return err
	}
	return b.DeleteRange(entryKey(0), entryKey(upto+1), nil)
}

// put adds v, marshalled, to b at k.
func put(b *pebble.Batch, k []byte, v interface{ Marshal() ([]byte, error) }) error {
	data, err := v.Marshal()
	if err != nil {
		return err
	}
	return b.Set(k, data, nil)
}

// load reads everything back.
func (d *disk) load() (hs pb.HardState, snap pb.Snapshot, ents []pb.Entry, err error) {
	if err := d.getInto(hardKey, &hs, "hard state"); err != nil {
		return hs, snap, nil, err
	}
	if err := d.getInto(snapKey, &snap, "snapshot"); err != nil {
		return hs, snap, nil, err
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

// getInto unmarshals the value at k, if any, into v; what names v in errors.
func (d *disk) getInto(k []byte, v interface{ Unmarshal([]byte) error }, what string) error {
	data, ok, err := d.get(k)
	if err != nil || !ok {
		return err
	}
	if err := v.Unmarshal(data); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
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
