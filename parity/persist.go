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
//	meta                          configuration hash, op numbers (node.Enc)
//	cfg                           gob of the configuration the server is in
//	rc                            gob of parityRC: incarnation, fences,
//	                              degraded blocks, snapshot copies, early
//	                              stream messages, kept deltas, rebuild nonce,
//	                              versions of rebuilt blocks, whether msg.Rebuilt
//	                              awaits its acknowledgement
//	c/<shard>/<client>            a client record (hex fields; node.Enc)
//	b/<stripe, hex>               the stripe's parity block
//	p/<shard>/<op_num>/<stripe>   a held PREPARE (backup.PersistPrepares)
//
// Blocks, PREPAREs and client records are written when they change, cfg
// and rc when their hash changes; meta on every Persist. The rebuild in
// progress is not kept: after a restart, Init starts it again with a
// fresh nonce.

// parityRC is the durable part of reconfState.
type parityRC struct {
	Inc      uint64
	Stopped  []bool
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

type snapRec struct {
	Requester node.Addr
	Stripe    int
	Nonce     uint64
	HasCopy   bool
	Copy      []byte
	Seen      uint64
}

// persistMemo remembers the hashes of what Persist last wrote, and the
// client records changed since (nil until TrackChanges).
type persistMemo struct {
	cfg, rc uint64
	clients map[clientKey]bool
}

func (m *persistMemo) clientChanged(k clientKey) {
	if m.clients != nil {
		m.clients[k] = true
	}
}

func (s *Server) setClient(k clientKey, r msg.ClientRecord) {
	s.rc.clients[k] = r
	s.saved.clientChanged(k)
}

func clientRecKey(k clientKey) string { return fmt.Sprintf("c/%08x/%016x", uint32(k.shard), k.client) }

var _ node.Persistent = (*Server)(nil)

// TrackChanges implements node.Persistent.
func (s *Server) TrackChanges() {
	s.saved = persistMemo{clients: make(map[clientKey]bool, len(s.rc.clients))}
	for k := range s.rc.clients {
		s.saved.clients[k] = true
	}
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
	for k := range s.saved.clients {
		if r, ok := s.rc.clients[k]; ok {
			var b node.Enc
			b.Uint64(r.Seq)
			r.Reply.Encode(&b)
			w.Put(clientRecKey(k), b.B)
		} else {
			w.Delete(clientRecKey(k))
		}
	}
	clear(s.saved.clients)
	h := node.NewHasher()
	rest := s.rc
	rest.clients = nil // persisted on their own
	rest.hash(h)
	if rh := h.Sum(); s.saved.rc != rh {
		rc := parityRC{Inc: s.rc.inc, Stopped: s.rc.stopped, Degraded: s.rc.degraded, Early: backup.EarlyToRecords(s.rc.early),
			Nonce: s.rc.nonce, Kept: s.rc.kept, Report: s.rc.report}
		for _, v := range s.rc.versions {
			rc.Versions = append(rc.Versions, versionRec{Stripe: v.stripe, Prims: v.prims, OpNums: v.opNums})
		}
		for _, sn := range s.rc.snaps {
			rc.Snaps = append(rc.Snaps, snapRec{Requester: sn.requester, Stripe: sn.stripe, Nonce: sn.nonce,
				HasCopy: sn.copy != nil, Copy: sn.copy, Seen: sn.seen})
		}
		w.Put("rc", node.GobBytes(rc))
		s.saved.rc = rh
	}
	var m node.Enc
	m.Uint64(s.cfgHash)
	m.Uint64(uint64(len(s.opNums)))
	for _, n := range s.opNums {
		m.Uint64(n)
	}
	w.Put("meta", m.B)
}

// Restore implements node.Persistent.
func (s *Server) Restore(r node.Reader) error {
	v, ok, err := r.Get("meta")
	if err != nil || !ok {
		return err
	}
	d := node.NewDec(v)
	cfgHash := d.Uint64()
	opNums := make([]uint64, d.Len())
	for i := range opNums {
		opNums[i] = d.Uint64()
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("parity/%d: meta: %w", s.me, err)
	}
	if err := s.restoreConfig(r, cfgHash); err != nil {
		return err
	}
	if len(opNums) != len(s.opNums) {
		return fmt.Errorf("parity/%d: stored state is for another layout", s.me)
	}
	copy(s.opNums, opNums)
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
	return s.restoreClients(r)
}

// restoreClients reads back the client records.
func (s *Server) restoreClients(r node.Reader) error {
	return r.Scan("c/", func(k string, v []byte) error {
		var shard uint32
		var client uint64
		_, err := fmt.Sscanf(k, "c/%08x/%016x", &shard, &client)
		d := node.NewDec(v)
		rec := msg.ClientRecord{Client: client, Seq: d.Uint64(), Reply: msg.DecodeReply(d)}
		if err == nil {
			err = d.Err()
		}
		if err != nil {
			return fmt.Errorf("parity/%d: bad client record %q: %v", s.me, k, err)
		}
		s.rc.clients[clientKey{int(shard), client}] = rec
		return nil
	})
}

// Stored is the number of parity blocks the server holds.
func (s *Server) Stored() int { return s.blocks.Len() }
