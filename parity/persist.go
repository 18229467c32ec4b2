package parity

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state of a parity server (node.Persistent), under the keys
//
//	meta                          gob of parityMeta: configuration hash, op numbers
//	cfg                           gob of the configuration the server is in
//	rc                            gob of parityRC: incarnation, fences, client
//	                              records, degraded blocks, snapshot copies, early
//	                              stream messages, kept deltas, rebuild nonce,
//	                              versions of rebuilt blocks, whether msg.Rebuilt
//	                              awaits its acknowledgement
//	b/<stripe, hex>               the stripe's parity block
//	p/<shard>/<op_num>/<stripe>   gob of a held PREPARE (hex fields)
//
// Blocks and PREPAREs are written when they change, cfg and rc when their
// hash changes; meta on every Persist. The rebuild in progress is not
// kept: after a restart, Init starts it again with a fresh nonce.

type parityMeta struct {
	CfgHash uint64
	OpNums  []uint64
}

// parityRC is the durable part of reconfState.
type parityRC struct {
	Inc      uint64
	Stopped  []bool
	Clients  []clientRec
	Degraded []bool
	Snaps    []snapRec
	Early    []backup.EarlyRecord
	Nonce    uint64
	Kept     []msg.Prepare
	Versions []versionRec
	Report   bool
}

type versionRec struct {
	Stripe        int
	Prims, OpNums []uint64
}

type clientRec struct {
	Shard int
	Rec   msg.ClientRecord
}

type snapRec struct {
	Requester node.Addr
	Stripe    int
	Nonce     uint64
	HasCopy   bool
	Copy      []byte
	Seen      uint64
}

// persistMemo remembers the hashes of what Persist last wrote.
type persistMemo struct{ cfg, rc uint64 }

var _ node.Persistent = (*Server)(nil)

// TrackChanges implements node.Persistent.
func (s *Server) TrackChanges() {
	s.saved = persistMemo{}
	s.blocks.Track()
	s.prepares.Track()
}

// Persist implements node.Persistent.
func (s *Server) Persist(w node.Writer) {
	s.blocks.TakeChanged(func(id uint64, v []byte) { w.Put(fmt.Sprintf("b/%016x", id), v) })
	backup.PersistPrepares(&s.prepares, w)
	if s.saved.cfg != s.cfgHash {
		w.Put("cfg", node.GobBytes(s.cfg))
		s.saved.cfg = s.cfgHash
	}
	h := node.NewHasher()
	s.rc.hash(h)
	if rh := h.Sum(); s.saved.rc != rh {
		rc := parityRC{Inc: s.rc.inc, Stopped: s.rc.stopped, Degraded: s.rc.degraded, Early: backup.EarlyToRecords(s.rc.early),
			Nonce: s.rc.nonce, Kept: s.rc.kept, Report: s.rc.report}
		for _, v := range s.rc.versions {
			rc.Versions = append(rc.Versions, versionRec{Stripe: v.stripe, Prims: v.prims, OpNums: v.opNums})
		}
		for k, r := range s.rc.clients {
			rc.Clients = append(rc.Clients, clientRec{Shard: k.shard, Rec: r})
		}
		for _, sn := range s.rc.snaps {
			rc.Snaps = append(rc.Snaps, snapRec{Requester: sn.requester, Stripe: sn.stripe, Nonce: sn.nonce,
				HasCopy: sn.copy != nil, Copy: sn.copy, Seen: sn.seen})
		}
		w.Put("rc", node.GobBytes(rc))
		s.saved.rc = rh
	}
	w.Put("meta", node.GobBytes(parityMeta{CfgHash: s.cfgHash, OpNums: s.opNums}))
}

// Restore implements node.Persistent.
func (s *Server) Restore(r node.Reader) error {
	v, ok, err := r.Get("meta")
	if err != nil || !ok {
		return err
	}
	var m parityMeta
	if err := node.GobDecode(v, &m); err != nil {
		return fmt.Errorf("parity/%d: meta: %w", s.me, err)
	}
	if err := s.restoreConfig(r, m.CfgHash); err != nil {
		return err
	}
	if len(m.OpNums) != len(s.opNums) {
		return fmt.Errorf("parity/%d: stored state is for another layout", s.me)
	}
	copy(s.opNums, m.OpNums)
	err = r.Scan("b/", func(k string, v []byte) error {
		id, err := strconv.ParseUint(strings.TrimPrefix(k, "b/"), 16, 64)
		if err != nil || len(v) != s.cfg.Layout.BlockSize {
			return fmt.Errorf("parity/%d: bad block record %q (%d bytes)", s.me, k, len(v))
		}
		s.blocks.Put(id, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return err
	}
	if err := backup.RestorePrepares(&s.prepares, r); err != nil {
		return fmt.Errorf("parity/%d: %w", s.me, err)
	}
	s.blocks.TakeChanged(func(uint64, []byte) {})
	return nil
}

// restoreConfig reads back the configuration and the reconfiguration
// state. A store without them (written before they were kept) must be for
// the configuration the server was made with.
func (s *Server) restoreConfig(r node.Reader, cfgHash uint64) error {
	cfg, found, err := msg.ReadConfig(r, fmt.Sprintf("parity/%d", s.me), s.cfg, cfgHash)
	if err != nil || !found {
		return err
	}
	s.cfg, s.cfgHash = cfg, cfgHash
	s.rc = newReconfState(cfg, s.me)
	v, ok, err := r.Get("rc")
	if err != nil || !ok {
		return err
	}
	var rc parityRC
	if err := node.GobDecode(v, &rc); err != nil {
		return fmt.Errorf("parity/%d: rc: %w", s.me, err)
	}
	if len(rc.Stopped) != len(s.rc.stopped) {
		return fmt.Errorf("parity/%d: rc: %d fences for %d shards", s.me, len(rc.Stopped), len(s.rc.stopped))
	}
	s.rc.inc, s.rc.stopped, s.rc.nonce, s.rc.kept, s.rc.report = rc.Inc, rc.Stopped, rc.Nonce, rc.Kept, rc.Report
	if len(rc.Degraded) > 0 {
		s.rc.degraded = rc.Degraded
	}
	for _, c := range rc.Clients {
		s.rc.clients[clientKey{c.Shard, c.Rec.Client}] = c.Rec
	}
	for _, v := range rc.Versions {
		s.rc.versions = append(s.rc.versions, version{stripe: v.Stripe, prims: v.Prims, opNums: v.OpNums})
	}
	for _, sn := range rc.Snaps {
		x := &snapshot{requester: sn.Requester, stripe: sn.Stripe, nonce: sn.Nonce, seen: sn.Seen}
		if sn.HasCopy {
			x.copy = sn.Copy
		}
		s.rc.snaps = append(s.rc.snaps, x)
	}
	if s.rc.early, err = backup.EarlyFromRecords(rc.Early); err != nil {
		return fmt.Errorf("parity/%d: rc: %w", s.me, err)
	}
	return nil
}

// Stored is the number of parity blocks the server holds.
func (s *Server) Stored() int { return s.blocks.Len() }
