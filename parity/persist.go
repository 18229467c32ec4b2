package parity

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/recovery"
)

// Durable state of a parity server (node.Persistent), under the keys
//
//	meta                          configuration hash, op numbers (node.Enc)
//	cfg                           gob of the configuration the server is in
//	rc                            gob of parityRC: incarnation, fences,
//	                              degraded blocks, early stream messages,
//	                              kept deltas, rebuild nonce, versions of
//	                              rebuilt blocks, whether msg.Rebuilt
//	                              awaits its acknowledgement
//	c/<shard>/<client>            a client record (hex fields; node.Enc)
//	s/<requester>/<stripe, hex>   a snapshot but its copies (node.Enc)
//	b/<stripe, hex>               the stripe's parity block
//	p/<shard>/<op_num>/<stripe>   a held PREPARE (backup.PersistPrepares)
//
// Blocks, PREPAREs, client records and snapshots are written when they
// change (in rc, every marker rewrote every snapshot of the rebuild), cfg
// and rc when their hash changes; meta when it changes. The rebuild in
// progress is not kept: after a restart, Init starts it again with a
// fresh nonce. Nor are snapshot copies: a snapshot the server had not
// answered when it stopped is abandoned (restored as answered, so a
// marker of its nonce takes no second cut), and its requester, hearing
// nothing, asks again under a new nonce (docs/recovery.md).

// parityRC is the durable part of reconfState.
type parityRC struct {
	Inc      uint64
	Stopped  []bool
	Flags    recovery.Flags // the degraded flags, packed: rewritten with every run
	Degraded []bool         // the degraded flags as older builds wrote them; read only
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

// persistMemo remembers the hashes of what Persist last wrote, and the
// client records and snapshots changed since (nil until TrackChanges).
type persistMemo struct {
	state   msg.StateMemo
	clients map[clientKey]bool
	snaps   map[snapKey]bool
	ord     uint64 // the newest snapshot's ord
}

// snapKey names a snapshot record: a requester has one snapshot per run.
type snapKey struct {
	requester node.Addr
	stripe    int
}

func (m *persistMemo) snapChanged(sn *snapshot) {
	if m.snaps != nil {
		m.snaps[snapKey{sn.requester, sn.stripe}] = true
	}
}

func snapRecKey(k snapKey) string {
	return node.HexKey("s/"+string(k.requester)+"/", uint64(uint32(k.stripe)), 8)
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

func clientRecKey(k clientKey) string {
	var a [32]byte
	b := node.AppendHex(append(a[:0], "c/"...), uint64(uint32(k.shard)), 8)
	return string(node.AppendHex(append(b, '/'), k.client, 16))
}

var _ node.Persistent = (*Server)(nil)

// TrackChanges implements node.Persistent.
func (s *Server) TrackChanges() {
	s.saved = persistMemo{clients: make(map[clientKey]bool, len(s.rc.clients)), snaps: map[snapKey]bool{}}
	for k := range s.rc.clients {
		s.saved.clients[k] = true
	}
	for _, sn := range s.rc.snaps {
		s.saved.snapChanged(sn)
		s.saved.ord = max(s.saved.ord, sn.ord)
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
	for k := range s.saved.snaps {
		sn := s.findRun(k.requester, k.stripe)
		node.PutOrDelete(w, snapRecKey(k), sn != nil, func(b *node.Enc) {
			sn.fields(b)
			b.Uint64(sn.ord)
		})
	}
	clear(s.saved.snaps)
	h := node.NewHasher()
	rest := s.rc
	rest.clients, rest.snaps = nil, nil // persisted on their own
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
	rc := parityRC{Inc: s.rc.inc, Stopped: s.rc.stopped, Flags: s.rc.degraded, Early: backup.EarlyToRecords(s.rc.early),
		Nonce: s.rc.nonce, Kept: s.rc.kept, Report: s.rc.report}
	for _, v := range s.rc.versions {
		rc.Versions = append(rc.Versions, versionRec{Stripe: v.stripe, Count: v.count, Prims: v.prims, OpNums: v.opNums})
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
	if err := s.restoreSnaps(r); err != nil {
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
	if Mutant != "snapshot-restart-recopy" {
		s.AbandonUnanswered()
		return nil
	}
	for _, sn := range s.rc.snaps {
		if !sn.sent { // copies of one stripe taken again: a later cut
			_, idx := s.cfg.Layout.RoleOf(sn.stripe, s.me)
			sn.copies, sn.own = make([][]byte, 1), make([]bool, 1)
			s.copyAt(sn, 0, sn.stripe, idx)
		}
	}
	return nil
}

// AbandonUnanswered marks every snapshot not yet answered as answered,
// dropping its copies, as a restart does (the copies are not persisted):
// a marker of its nonce takes no second cut, and the requester's next
// round covers it.
func (s *Server) AbandonUnanswered() {
	for _, sn := range s.rc.snaps {
		sn.sent, sn.copies, sn.own = true, nil, nil
	}
}

// restoreRC takes back the durable part of reconfState but its client
// records.
func (s *Server) restoreRC(rc parityRC) error {
	if len(rc.Stopped) != len(s.rc.stopped) {
		return fmt.Errorf("%d fences for %d shards", len(rc.Stopped), len(s.rc.stopped))
	}
	s.rc.inc, s.rc.stopped, s.rc.nonce, s.rc.kept, s.rc.report = rc.Inc, rc.Stopped, rc.Nonce, rc.Kept, rc.Report
	if deg := rc.degraded(); len(deg) > 0 {
		s.rc.degraded = deg
		s.rc.left = recovery.CountDegraded(deg)
	}
	for _, v := range rc.Versions {
		s.rc.versions = append(s.rc.versions, version{stripe: v.Stripe, count: max(v.Count, 1), prims: v.Prims, opNums: v.OpNums})
	}
	var err error
	s.rc.early, err = backup.EarlyFromRecords(rc.Early)
	return err
}

// restoreSnaps reads back the snapshot records, in the order they were
// made.
func (s *Server) restoreSnaps(r node.Reader) error {
	err := r.Scan("s/", func(k string, v []byte) error {
		d := node.NewDec(v)
		sn := &snapshot{requester: node.Addr(d.String()), stripe: d.Int(), nonce: d.Uint64(), seen: d.Uint64(), sent: d.Bool(),
			ord: d.Uint64()}
		if err := d.Err(); err != nil {
			return fmt.Errorf("bad snapshot record %q: %v", k, err)
		}
		s.rc.snaps = append(s.rc.snaps, sn)
		s.saved.ord = max(s.saved.ord, sn.ord)
		return nil
	})
	slices.SortFunc(s.rc.snaps, func(a, b *snapshot) int { return cmp.Compare(a.ord, b.ord) })
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

// degraded is the record's degraded flags, packed or as older builds
// wrote them.
func (rc parityRC) degraded() []bool { return recovery.Either(rc.Flags, rc.Degraded) }
