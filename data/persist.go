package data

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/recovery"
)

// Durable state of a data server (node.Persistent), under the keys
//
//	meta             configuration hash, op_num (node.Enc)
//	o/<op_num, hex>  a pending operation as it was made: client, request,
//	                 reply, per stripe its PREPARE, and which PREPAREs
//	                 left their delta to l/ (node.Enc)
//	l/<op_num, hex>/<part>/<0|1>  the PREPARE's block before (0) and
//	                 after (1) the operation, linked (node.Linker)
//	a/<op_num, hex>  the operation's acknowledgements per stripe, and
//	                 whether it committed (node.Enc)
//	cfg              gob of the configuration the server is in
//	rc               gob of dataRC: incarnation, fences, degraded blocks,
//	                 snapshot nonce, backups to re-send to, whether
//	                 msg.Rebuilt awaits its acknowledgement (older builds
//	                 also kept the snapshot answers here)
//	n/<requester>/<stripe, hex>  a snapshot answer but its blocks (node.Enc)
//	b/<block, hex>   the block's contents
//	c/<client, hex>  the client's clientEntry (node.Enc)
//
// Everything is written when it changes: an operation once when it is
// made and its a/ record when its acknowledgements change, both deleted
// when it leaves pending_ops; an answer when it is made or sent, deleted
// when it is replaced or its configuration ends; cfg and rc when their
// hash changes (for rc, reconfState.recordHash); meta when it changes (a
// few bytes). Where the store links blocks (node.Linker; the runtime's
// block files), a new operation's PREPARE whose block only it wrote since
// the last Persist is written without its delta: l/ links the block's
// stored value before the operation and the one after, which name the
// same bytes as the b/ records did, and Restore takes old XOR new. So a
// large block's delta is not written a second time. Snapshots this server
// runs to rebuild its own blocks are not kept: after a restart, Init
// starts them again with fresh nonces. Nor are the blocks of snapshot
// answers: an answer not sent when the server stopped is abandoned
// (restored as sent, so a request repeated under its nonce takes no
// second cut), and its requester, hearing nothing, asks again under a new
// nonce.

// dataRC is the durable part of reconfState.
type dataRC struct {
	Inc      uint64
	Stopped  []node.Addr
	Flags    recovery.Flags // the degraded flags, packed: rewritten with every run
	Degraded []bool         // the degraded flags as older builds wrote them; read only
	Nonce    uint64
	Answers  []answerRec // as older builds wrote them; read only (now under n/)
	Resend   []node.Addr
	Report   bool
}

type answerRec struct {
	Requester   node.Addr
	Stripe      int
	Nonce       uint64
	Upto, OpNum uint64
	Sent        bool
}

// persistMemo remembers what Persist last wrote: the hashes of cfg and
// rc, and the pending operations; and the answers changed since (nil
// until TrackChanges).
type persistMemo struct {
	state   msg.StateMemo
	ops     map[uint64]savedOp
	answers map[ansKey]*answer // nil value: deleted
}

// ansKey names an answer record: a requester has one answer per run.
type ansKey struct {
	requester node.Addr
	stripe    int
}

// answerChanged notes that the answer a names is now now (nil: gone).
func (m *persistMemo) answerChanged(a, now *answer) {
	if m.answers != nil {
		m.answers[ansKey{a.requester, a.stripe}] = now
	}
}

func answerRecKey(k ansKey) string {
	return node.HexKey("n/"+string(k.requester)+"/", uint64(uint32(k.stripe)), 8)
}

// savedOp is what o/ and a/ hold for a pending operation.
type savedOp struct {
	p         *pendingOp
	committed bool
	acks      []uint64
	links     uint64 // the parts whose delta l/ holds, a bit each
}

func (v savedOp) current(p *pendingOp) bool {
	if v.p != p || v.committed != p.committed || len(v.acks) != len(p.parts) {
		return false
	}
	for i, pt := range p.parts {
		if v.acks[i] != pt.acks {
			return false
		}
	}
	return true
}

func saved(p *pendingOp) savedOp {
	v := savedOp{p: p, committed: p.committed, acks: make([]uint64, len(p.parts))}
	for i, pt := range p.parts {
		v.acks[i] = pt.acks
	}
	return v
}

var _ node.Persistent = (*Server)(nil)

// TrackChanges implements node.Persistent.
func (s *Server) TrackChanges() {
	s.saved = persistMemo{answers: make(map[ansKey]*answer, len(s.rc.answers))}
	for _, a := range s.rc.answers {
		s.saved.answerChanged(a, a)
	}
	s.blocks.Track()
	s.clients.changed = make(map[uint64]bool, len(s.clients.m))
	for c := range s.clients.m {
		s.clients.changed[c] = true
	}
}

// Persist implements node.Persistent.
func (s *Server) Persist(w node.Writer) {
	before := s.linkBefore(w)
	msg.PersistBlocks(s.blocks, w)
	for c := range s.clients.changed {
		e := s.clients.m[c]
		b := node.EncFor(w)
		b.Uint64(e.seq)
		b.Bool(e.done)
		e.reply.Encode(b)
		w.Put(node.HexKey("c/", c, 16), b.B)
	}
	clear(s.clients.changed)
	s.persistPending(w, before)
	for k, a := range s.saved.answers {
		node.PutOrDelete(w, answerRecKey(k), a != nil, func(b *node.Enc) {
			a.fields(b)
			b.Uint64(a.ord)
		})
	}
	clear(s.saved.answers)
	s.saved.state.Write(w, s.cfg, s.cfgHash, s.rc.recordHash(), s.rcRecord, func(m *node.Enc) { m.Uint64(s.opNum) })
}

// rcRecord is the rc record of the durable part of reconfState but its
// answers.
func (s *Server) rcRecord() any {
	return dataRC{Inc: s.rc.inc, Stopped: s.rc.stopped, Flags: s.rc.degraded, Nonce: s.rc.nonce, Resend: s.rc.resend,
		Report: s.rc.report}
}

// linkBefore links, where w can (node.Linker), the stored value of each
// block that exactly one new operation wrote since the last Persist and
// nothing else did: the block's value before that operation. It runs
// before the blocks are written and returns the parts it linked, by op
// number.
func (s *Server) linkBefore(w node.Writer) map[uint64]uint64 {
	lk, ok := w.(node.Linker)
	if !ok {
		return nil
	}
	var linked map[uint64]uint64
	for _, p := range s.pending {
		if _, saved := s.saved.ops[p.opNum]; saved || len(p.parts) > 64 {
			continue
		}
		for i, pt := range p.parts {
			if pt.prep.Delta == nil {
				continue
			}
			b := s.cfg.Layout.Block(pt.stripe, pt.prep.Pos)
			if !s.blocks.ChangedOnce(b) {
				continue
			}
			if lk.Link(linkKey(p.opNum, i, 0), msg.BlockKey(b)) {
				if linked == nil {
					linked = map[uint64]uint64{}
				}
				linked[p.opNum] |= 1 << i
			}
		}
	}
	return linked
}

// linkKey names the link to the block of an operation's part before (0)
// or after (1) the operation.
func linkKey(opNum uint64, part, after int) string {
	k := node.AppendHex(append(make([]byte, 0, 32), node.LinkPrefix...), opNum, 16)
	k = strconv.AppendInt(append(k, '/'), int64(part), 10)
	return string(strconv.AppendInt(append(k, '/'), int64(after), 10))
}

// unlink deletes the links of the parts an operation linked.
func unlink(w node.Writer, opNum, links uint64) {
	for i := 0; links != 0; i, links = i+1, links>>1 {
		if links&1 != 0 {
			w.Delete(linkKey(opNum, i, 0))
			w.Delete(linkKey(opNum, i, 1))
		}
	}
}

// persistPending writes the pending operations that changed since the
// last Persist and deletes those that left; before holds the parts
// linkBefore linked.
func (s *Server) persistPending(w node.Writer, before map[uint64]uint64) {
	if s.saved.ops == nil {
		s.saved.ops = map[uint64]savedOp{}
	}
	for _, p := range s.pending {
		v, ok := s.saved.ops[p.opNum]
		if ok && v.current(p) {
			continue
		}
		links := v.links
		if !ok || v.p != p {
			unlink(w, p.opNum, v.links)
			links = s.linkAfter(w, p, before[p.opNum])
			s.putOp(w, p, links)
		}
		b := node.EncFor(w)
		b.Bool(p.committed)
		for _, pt := range p.parts {
			b.Uint64(pt.acks)
		}
		w.Put(opKey("a/", p.opNum), b.B)
		sv := saved(p)
		sv.links = links
		s.saved.ops[p.opNum] = sv
	}
	if len(s.saved.ops) == len(s.pending) {
		return // every saved operation is pending
	}
	for n := range s.saved.ops {
		if _, found := slices.BinarySearchFunc(s.pending, n, cmpOpNum); !found {
			w.Delete(opKey("o/", n))
			w.Delete(opKey("a/", n))
			unlink(w, n, s.saved.ops[n].links)
			delete(s.saved.ops, n)
		}
	}
}

// linkAfter links the value after the operation of each part whose value
// before it linkBefore linked (parts, a bit each); a part it cannot link
// loses its first link too. It returns the parts linked.
func (s *Server) linkAfter(w node.Writer, p *pendingOp, parts uint64) uint64 {
	lk, _ := w.(node.Linker)
	for i, pt := range p.parts {
		if parts&(1<<i) == 0 {
			continue
		}
		if !lk.Link(linkKey(p.opNum, i, 1), msg.BlockKey(s.cfg.Layout.Block(pt.stripe, pt.prep.Pos))) {
			w.Delete(linkKey(p.opNum, i, 0))
			parts &^= 1 << i
		}
	}
	return parts
}

// putOp writes an operation's o/ record; the parts in links are written
// without their delta.
func (s *Server) putOp(w node.Writer, p *pendingOp, links uint64) {
	b := node.EncFor(w)
	b.Uint64(p.client)
	b.Uint64(p.seq)
	b.String(string(p.replyTo))
	p.reply.Encode(b)
	b.Uint64(uint64(len(p.parts)))
	for i, pt := range p.parts {
		b.Int(pt.stripe)
		prep := pt.prep
		if links&(1<<i) != 0 {
			prep.Delta = nil
		}
		prep.Encode(b)
	}
	if links != 0 {
		b.Uint64(links)
	}
	w.Put(opKey("o/", p.opNum), b.B)
}

func opKey(prefix string, n uint64) string { return node.HexKey(prefix, n, 16) }

// Restore implements node.Persistent. It expects the server as New made
// it, with the layout it ran with before; it takes the configuration it
// was in from the store.
func (s *Server) Restore(r node.Reader) error {
	who := fmt.Sprintf("data/%d", s.me)
	var opNum uint64
	var rc dataRC
	st, err := msg.ReadState(r, who, s.cfg, func(d *node.Dec) { opNum = d.Uint64() }, &rc)
	if err != nil || !st.Found {
		return err
	}
	s.cfg, s.cfgHash, s.opNum = st.Config, st.Hash, opNum
	s.rc = newReconfState(st.Config, s.me)
	if st.RC {
		s.restoreRC(rc)
	}
	if err := s.restoreAnswers(r); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	if err := s.restorePending(r); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	if err := msg.RestoreBlocks(s.blocks, r, who); err != nil {
		return err
	}
	err = r.Scan("c/", func(k string, v []byte) error {
		c, err := strconv.ParseUint(strings.TrimPrefix(k, "c/"), 16, 64)
		d := node.NewDec(v)
		e := clientEntry{seq: d.Uint64(), done: d.Bool(), reply: msg.DecodeReply(d)}
		if err == nil {
			err = d.Err()
		}
		if err != nil {
			return fmt.Errorf("%s: bad client record %q: %v", who, k, err)
		}
		s.clients.put(c, e)
		return nil
	})
	if err != nil {
		return err
	}
	// What was just read back is already durable.
	if s.clients.changed != nil {
		clear(s.clients.changed)
	}
	return nil
}

// restorePending reads back the pending operations (o/ and a/, in op
// number order).
func (s *Server) restorePending(r node.Reader) error {
	s.pending = nil
	s.saved.ops = map[uint64]savedOp{}
	links := map[uint64]uint64{}
	err := r.Scan("o/", func(k string, v []byte) error {
		n, err := strconv.ParseUint(strings.TrimPrefix(k, "o/"), 16, 64)
		d := node.NewDec(v)
		p := &pendingOp{opNum: n, client: d.Uint64(), seq: d.Uint64(), replyTo: node.Addr(d.String()), reply: msg.DecodeReply(d)}
		p.parts = make([]part, d.Len())
		for i := range p.parts {
			p.parts[i] = part{stripe: d.Int(), prep: msg.DecodePrepare(d)}
		}
		if d.More() {
			links[n] = d.Uint64()
		}
		if err == nil {
			err = d.Err()
		}
		if err != nil {
			return fmt.Errorf("bad operation record %q: %v", k, err)
		}
		s.pending = append(s.pending, p)
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range s.pending {
		k := opKey("a/", p.opNum)
		v, ok, err := r.Get(k)
		if err == nil && !ok {
			err = fmt.Errorf("missing")
		}
		if err != nil {
			return fmt.Errorf("operation record %q: %v", k, err)
		}
		d := node.NewDec(v)
		p.committed = d.Bool()
		for i := range p.parts {
			p.parts[i].acks = d.Uint64()
		}
		if err := d.Err(); err != nil {
			return fmt.Errorf("bad operation record %q: %v", k, err)
		}
		if err := s.restoreDeltas(r, p, links[p.opNum]); err != nil {
			return err
		}
		sv := saved(p)
		sv.links = links[p.opNum]
		s.saved.ops[p.opNum] = sv
	}
	return nil
}

// restoreDeltas takes the delta of each part in links (a bit each) from
// its l/ records: before XOR after. An absent before is a block never
// written (zeros).
func (s *Server) restoreDeltas(r node.Reader, p *pendingOp, links uint64) error {
	size := s.blocks.Size()
	for i := range p.parts {
		if links&(1<<i) == 0 {
			continue
		}
		var vs [2][]byte
		for after := range vs {
			k := linkKey(p.opNum, i, after)
			v, ok, err := r.Get(k)
			switch {
			case err != nil:
				return fmt.Errorf("link record %q: %v", k, err)
			case !ok && after == 0:
				v = make([]byte, size)
			case !ok:
				return fmt.Errorf("link record %q: missing", k)
			case len(v) != size:
				return fmt.Errorf("bad link record %q (%d bytes)", k, len(v))
			}
			vs[after] = v
		}
		p.parts[i].prep.Delta = erasure.Delta(vs[0], vs[1])
	}
	return nil
}

// restoreRC takes back the durable part of reconfState.
func (s *Server) restoreRC(rc dataRC) {
	s.rc.inc, s.rc.stopped, s.rc.nonce, s.rc.resend, s.rc.report = rc.Inc, rc.Stopped, rc.Nonce, rc.Resend, rc.Report
	if deg := rc.degraded(); len(deg) > 0 {
		s.rc.degraded = deg
		s.rc.left = recovery.CountDegraded(deg)
	}
	for _, a := range rc.Answers { // an older build's record: written under n/ at the next Persist
		s.addAnswer(&answer{requester: a.Requester, stripe: a.Stripe, nonce: a.Nonce, upto: a.Upto, opNum: a.OpNum, sent: a.Sent})
	}
}

// restoreAnswers reads back the answer records, in the order they were
// made, and abandons those not sent.
func (s *Server) restoreAnswers(r node.Reader) error {
	err := r.Scan("n/", func(k string, v []byte) error {
		d := node.NewDec(v)
		a := &answer{requester: node.Addr(d.String()), stripe: d.Int(), nonce: d.Uint64(), upto: d.Uint64(), opNum: d.Uint64(),
			sent: d.Bool(), ord: d.Uint64()}
		if err := d.Err(); err != nil {
			return fmt.Errorf("bad answer record %q: %v", k, err)
		}
		s.rc.answers = append(s.rc.answers, a)
		if !a.sent {
			s.rc.unsent++
		}
		return nil
	})
	slices.SortFunc(s.rc.answers, func(a, b *answer) int { return cmp.Compare(a.ord, b.ord) })
	s.AbandonUnanswered()
	return err
}

// AbandonUnanswered marks every snapshot answer not yet sent as sent,
// dropping its blocks, as a restart does (the blocks are not persisted):
// a request repeated under its nonce takes no second cut, and the
// requester's next round covers it.
func (s *Server) AbandonUnanswered() {
	for _, a := range s.rc.answers {
		if !a.sent {
			s.markSent(a)
		}
	}
}

// Stored is the number of blocks the server holds (written at least once).
func (s *Server) Stored() int { return s.blocks.Len() }

// degraded is the record's degraded flags, packed or as older builds
// wrote them.
func (rc dataRC) degraded() []bool { return recovery.Either(rc.Flags, rc.Degraded) }
