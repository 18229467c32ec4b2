package data

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state of a data server (node.Persistent), under the keys
//
//	meta             gob of dataMeta: configuration hash, op_num, pending_ops
//	cfg              gob of the configuration the server is in
//	rc               gob of dataRC: incarnation, fences, degraded blocks,
//	                 snapshot nonce and answers, backups to re-send to,
//	                 whether msg.Rebuilt awaits its acknowledgement
//	b/<block, hex>   the block's contents
//	c/<client, hex>  gob of the client's clientEntry
//
// Blocks and client entries are written when they change, cfg and rc when
// their hash changes; the metadata (small: pending_ops holds only
// operations in flight) on every Persist. Snapshots this server runs to
// rebuild its own blocks are not kept: after a restart, Init starts them
// again with fresh nonces.

type dataMeta struct {
	CfgHash uint64
	OpNum   uint64
	Pending []pendingRec
}

type pendingRec struct {
	OpNum, Client, Seq uint64
	ReplyTo            string
	Reply              msg.Reply
	Stripes            []int
	Acks               []uint64
	Preps              []msg.Prepare
	Committed          bool
}

type clientRec struct {
	Seq   uint64
	Done  bool
	Reply msg.Reply
}

// dataRC is the durable part of reconfState.
type dataRC struct {
	Inc      uint64
	Stopped  []node.Addr
	Degraded []bool
	Nonce    uint64
	Answers  []answerRec
	Resend   []node.Addr
	Report   bool
}

type answerRec struct {
	Requester   node.Addr
	Stripe      int
	Nonce       uint64
	HasBlock    bool
	Block       []byte
	Upto, OpNum uint64
	Sent        bool
}

// persistMemo remembers the hashes of what Persist last wrote.
type persistMemo struct{ cfg, rc uint64 }

var _ node.Persistent = (*Server)(nil)

// TrackChanges implements node.Persistent.
func (s *Server) TrackChanges() {
	s.saved = persistMemo{}
	s.blocks.Track()
	s.clients.changed = make(map[uint64]bool, len(s.clients.m))
	for c := range s.clients.m {
		s.clients.changed[c] = true
	}
}

// Persist implements node.Persistent.
func (s *Server) Persist(w node.Writer) {
	s.blocks.TakeChanged(func(id uint64, v []byte) { w.Put(blockKey(id), v) })
	for c := range s.clients.changed {
		e := s.clients.m[c]
		w.Put(fmt.Sprintf("c/%016x", c), node.GobBytes(clientRec{Seq: e.seq, Done: e.done, Reply: e.reply}))
	}
	clear(s.clients.changed)
	if s.saved.cfg != s.cfgHash {
		w.Put("cfg", node.GobBytes(s.cfg))
		s.saved.cfg = s.cfgHash
	}
	h := node.NewHasher()
	s.rc.hash(h)
	if rh := h.Sum(); s.saved.rc != rh {
		rc := dataRC{Inc: s.rc.inc, Stopped: s.rc.stopped, Degraded: s.rc.degraded, Nonce: s.rc.nonce, Resend: s.rc.resend,
			Report: s.rc.report}
		for _, a := range s.rc.answers {
			rc.Answers = append(rc.Answers, answerRec{Requester: a.requester, Stripe: a.stripe, Nonce: a.nonce,
				HasBlock: a.block != nil, Block: a.block, Upto: a.upto, OpNum: a.opNum, Sent: a.sent})
		}
		w.Put("rc", node.GobBytes(rc))
		s.saved.rc = rh
	}
	m := dataMeta{CfgHash: s.cfgHash, OpNum: s.opNum}
	for _, p := range s.pending {
		r := pendingRec{OpNum: p.opNum, Client: p.client, Seq: p.seq, ReplyTo: string(p.replyTo), Reply: p.reply, Committed: p.committed}
		for _, pt := range p.parts {
			r.Stripes = append(r.Stripes, pt.stripe)
			r.Acks = append(r.Acks, pt.acks)
			r.Preps = append(r.Preps, pt.prep)
		}
		m.Pending = append(m.Pending, r)
	}
	w.Put("meta", node.GobBytes(m))
}

// Restore implements node.Persistent. It expects the server as New made
// it, with the layout it ran with before; it takes the configuration it
// was in from the store.
func (s *Server) Restore(r node.Reader) error {
	v, ok, err := r.Get("meta")
	if err != nil || !ok {
		return err
	}
	var m dataMeta
	if err := node.GobDecode(v, &m); err != nil {
		return fmt.Errorf("data/%d: meta: %w", s.me, err)
	}
	if err := s.restoreConfig(r, m.CfgHash); err != nil {
		return err
	}
	s.opNum = m.OpNum
	s.pending = nil
	for _, r := range m.Pending {
		p := &pendingOp{opNum: r.OpNum, client: r.Client, seq: r.Seq, replyTo: node.Addr(r.ReplyTo), reply: r.Reply, committed: r.Committed}
		for i := range r.Stripes {
			pt := part{stripe: r.Stripes[i], acks: r.Acks[i]}
			if i < len(r.Preps) {
				pt.prep = r.Preps[i]
			}
			p.parts = append(p.parts, pt)
		}
		s.pending = append(s.pending, p)
	}
	err = r.Scan("b/", func(k string, v []byte) error {
		id, err := strconv.ParseUint(strings.TrimPrefix(k, "b/"), 16, 64)
		if err != nil || len(v) != s.cfg.Layout.BlockSize {
			return fmt.Errorf("data/%d: bad block record %q (%d bytes)", s.me, k, len(v))
		}
		s.blocks.Put(id, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return err
	}
	err = r.Scan("c/", func(k string, v []byte) error {
		c, err := strconv.ParseUint(strings.TrimPrefix(k, "c/"), 16, 64)
		var e clientRec
		if err == nil {
			err = node.GobDecode(v, &e)
		}
		if err != nil {
			return fmt.Errorf("data/%d: bad client record %q: %v", s.me, k, err)
		}
		s.clients.put(c, clientEntry{seq: e.Seq, done: e.Done, reply: e.Reply})
		return nil
	})
	if err != nil {
		return err
	}
	// What was just read back is already durable.
	s.blocks.TakeChanged(func(uint64, []byte) {})
	if s.clients.changed != nil {
		clear(s.clients.changed)
	}
	return nil
}

// restoreConfig reads back the configuration and the reconfiguration
// state. A store without them (written before they were kept) must be for
// the configuration the server was made with.
func (s *Server) restoreConfig(r node.Reader, cfgHash uint64) error {
	cfg, found, err := msg.ReadConfig(r, fmt.Sprintf("data/%d", s.me), s.cfg, cfgHash)
	if err != nil || !found {
		return err
	}
	s.cfg, s.cfgHash = cfg, cfgHash
	s.rc = newReconfState(cfg, s.me)
	v, ok, err := r.Get("rc")
	if err != nil || !ok {
		return err
	}
	var rc dataRC
	if err := node.GobDecode(v, &rc); err != nil {
		return fmt.Errorf("data/%d: rc: %w", s.me, err)
	}
	s.rc.inc, s.rc.stopped, s.rc.nonce, s.rc.resend, s.rc.report = rc.Inc, rc.Stopped, rc.Nonce, rc.Resend, rc.Report
	if len(rc.Degraded) > 0 {
		s.rc.degraded = rc.Degraded
	}
	for _, a := range rc.Answers {
		x := &answer{requester: a.Requester, stripe: a.Stripe, nonce: a.Nonce, upto: a.Upto, opNum: a.OpNum, sent: a.Sent}
		if a.HasBlock {
			x.block = a.Block
		}
		s.rc.answers = append(s.rc.answers, x)
	}
	return nil
}

func blockKey(id uint64) string { return fmt.Sprintf("b/%016x", id) }

// Stored is the number of blocks the server holds (written at least once).
func (s *Server) Stored() int { return s.blocks.Len() }
