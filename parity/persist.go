package parity

import (
	"fmt"

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
	Stripe, Count int
	Prims, OpNums []uint64
}

type snapRec struct {
	Requester node.Addr
	Stripe    int
	Nonce     uint64
	HasCopy   bool
	Copy      []byte
	Rest      [][]byte // the run's later stripes' copies (empty: none)
	Seen      uint64
	Sent      bool
}

// persistMemo remembers the hashes of what Persist last wrote, and the
// client records changed since (nil until TrackChanges).
type persistMemo struct {
	state   msg.StateMemo
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
	msg.PersistBlocks(s.blocks, w)
	backup.PersistPrepares(&s.prepares, w)
	for k := range s.saved.clients {
		r, ok := s.rc.clients[k]
		node.PutOrDelete(w, clientRecKey(k), ok, func(b *node.Enc) {
			b.Uint64(r.Seq)
			r.Reply.Encode(b)
		})
	}
	clear(s.saved.clients)
	h := node.NewHasher()
	rest := s.rc
	rest.clients = nil // persisted on their own
	rest.hash(h)
	s.saved.state.Write(w, s.cfg, s.cfgHash, h.Sum(), s.rcRecord, func(m *node.Enc) {
		m.Uint64(uint64(len(s.opNums)))
		for _, n := range s.opNums {
			m.Uint64(n)
		}
	})
}

// rcRecord is the rc record of reconfState but its client records.
func (s *Server) rcRecord() any {
	rc := parityRC{Inc: s.rc.inc, Stopped: s.rc.stopped, Degraded: s.rc.degraded, Early: backup.EarlyToRecords(s.rc.early),
		Nonce: s.rc.nonce, Kept: s.rc.kept, Report: s.rc.report}
	for _, v := range s.rc.versions {
		rc.Versions = append(rc.Versions, versionRec{Stripe: v.stripe, Count: v.count, Prims: v.prims, OpNums: v.opNums})
	}
	for _, sn := range s.rc.snaps {
		r := snapRec{Requester: sn.requester, Stripe: sn.stripe, Nonce: sn.nonce, Seen: sn.seen, Sent: sn.sent}
		if !sn.sent {
			r.HasCopy, r.Copy, r.Rest = sn.copies[0] != nil, sn.copies[0], sn.copies[1:]
		}
		rc.Snaps = append(rc.Snaps, r)
	}
	return rc
}

// Restore implements node.Persistent.
func (s *Server) Restore(r node.Reader) error {
	who := fmt.Sprintf("parity/%d", s.me)
	var opNums []uint64
	var rc parityRC
	st, err := msg.ReadState(r, who, s.cfg, func(d *node.Dec) {
		opNums = make([]uint64, d.Len())
		for i := range opNums {
			opNums[i] = d.Uint64()
		}
	}, &rc)
	if err != nil || !st.Found {
		return err
	}
	s.cfg, s.cfgHash = st.Config, st.Hash
	s.rc = newReconfState(st.Config, s.me)
	if st.RC {
		if err := s.restoreRC(rc); err != nil {
			return fmt.Errorf("%s: rc: %w", who, err)
		}
	}
	if err := s.restoreClients(r); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	if len(opNums) != len(s.opNums) {
		return fmt.Errorf("%s: stored state is for another layout", who)
	}
	copy(s.opNums, opNums)
	if err := msg.RestoreBlocks(s.blocks, r, who); err != nil {
		return err
	}
	if err := backup.RestorePrepares(&s.prepares, r); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	return nil
}

// restoreRC takes back the durable part of reconfState but its client
// records.
func (s *Server) restoreRC(rc parityRC) error {
	if len(rc.Stopped) != len(s.rc.stopped) {
		return fmt.Errorf("%d fences for %d shards", len(rc.Stopped), len(s.rc.stopped))
	}
	s.rc.inc, s.rc.stopped, s.rc.nonce, s.rc.kept, s.rc.report = rc.Inc, rc.Stopped, rc.Nonce, rc.Kept, rc.Report
	if len(rc.Degraded) > 0 {
		s.rc.degraded = rc.Degraded
	}
	for _, v := range rc.Versions {
		s.rc.versions = append(s.rc.versions, version{stripe: v.Stripe, count: max(v.Count, 1), prims: v.Prims, opNums: v.OpNums})
	}
	for _, sn := range rc.Snaps {
		x := &snapshot{requester: sn.Requester, stripe: sn.Stripe, nonce: sn.Nonce, seen: sn.Seen, sent: sn.Sent}
		if !sn.Sent {
			x.copies = msg.RestoreRun(sn.Copy, sn.HasCopy, sn.Rest)
			x.own = make([]bool, len(x.copies))
		}
		s.rc.snaps = append(s.rc.snaps, x)
	}
	var err error
	s.rc.early, err = backup.EarlyFromRecords(rc.Early)
	return err
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
			return fmt.Errorf("bad client record %q: %v", k, err)
		}
		s.rc.clients[clientKey{int(shard), client}] = rec
		return nil
	})
}

// Stored is the number of parity blocks the server holds.
func (s *Server) Stored() int { return s.blocks.Len() }
