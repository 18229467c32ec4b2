package runtime

import (
	"encoding/binary"
	"slices"

	"github.com/cockroachdb/pebble"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/node"
)

// Incarnations (node.Incarnated, node.Starter, node.Peered): how the
// runtime implements the node API's rule that a stream ends when either end
// is replaced.
//
//   - A message that starts a newer incarnation at this node's address
//     (a NewConfig replacing it) first ends the old incarnation: its
//     outgoing and incoming streams end, its timers no longer fire, and
//     everything it stored is deleted in the batch that writes the new
//     incarnation's state (the handler builds that state; the runtime then
//     tracks it from scratch, so Persist writes it whole). It runs in a
//     batch of its own, after the events before it.
//   - When this node addresses a peer at a newer incarnation (its
//     node.Peered view changed: a server applied a configuration that
//     replaced the peer), the streams between this node and the peer's
//     older incarnation end: what the handler streams to the peer from
//     then on opens a new stream (a data server re-sends its pending_ops
//     there first, thesis 3.3.2.2), and the old stream's unsent messages
//     are dropped. Until then, what it streams there is refused by the
//     new incarnation and dropped with the old stream.
//   - Every stream hello names the sender's incarnation and the
//     receiver's as the sender's node addresses it (1 until it names
//     one). A receiver refuses a stream meant for another incarnation of
//     itself, or from an incarnation of the sender older than the one its
//     node addresses, so an old incarnation's messages never reach a new
//     one.
//
// The peers' incarnations are stored under k\x00<addr>\x00<peer>.

// incChanges are the store writes that ending streams and incarnations
// need, made in the batch that handles the messages.
type incChanges struct {
	wipe  bool        // delete everything the node and its streams stored
	outs  []node.Addr // outgoing streams to forget
	ins   []node.Addr // incoming streams to forget
	peers map[node.Addr]uint64
	ended []*outStream // stopped once the batch commits
}

func peerKey(a, peer node.Addr) []byte { return key("k", string(a), string(peer)) }

func (c *incChanges) write(b *pebble.Batch, a node.Addr) {
	if c.wipe {
		for _, p := range []string{"n", "i", "m", "b"} {
			pre := append(key(p, string(a)), 0)
			_ = b.DeleteRange(pre, prefixEnd(pre), nil)
		}
	}
	for _, to := range c.outs {
		_ = b.Delete(outMetaKey(a, to), nil)
	}
	for _, from := range c.ins {
		_ = b.Delete(inKey(a, from), nil)
	}
	for p, inc := range c.peers {
		_ = b.Set(peerKey(a, p), binary.BigEndian.AppendUint64(nil, inc), nil)
	}
}

// processAll processes a batch, giving each message that starts a new
// incarnation here a batch of its own.
func (l *loop) processAll(batch []event) {
	for len(batch) > 0 {
		restart := l.startsHere(batch[0])
		i := 1
		for !restart && i < len(batch) && !l.startsHere(batch[i]) {
			i++
		}
		l.process(batch[:i], restart)
		batch = batch[i:]
	}
}

// startsHere reports whether ev starts a newer incarnation of this node.
func (l *loop) startsHere(ev event) bool {
	st, ok := ev.m.(node.Starter)
	if !ok {
		return false
	}
	inc, ok := st.StartsIncarnation(l.addr)
	cur, known := l.n.(node.Incarnated)
	return ok && known && cur.Incarnation() < inc
}

// endIncarnation ends the node's current incarnation before the handler
// builds the next one.
func (l *loop) endIncarnation() incChanges {
	c := incChanges{wipe: true}
	l.epoch++
	for to := range l.out {
		if o := l.dropOut(to); o != nil {
			c.ended = append(c.ended, o)
		}
	}
	l.mu.Lock()
	ins := make([]*inStream, 0, len(l.in))
	for _, s := range l.in {
		ins = append(ins, s)
	}
	l.mu.Unlock()
	for _, s := range ins {
		s.reset()
	}
	l.h.log.Info("new incarnation starting; the old one's streams, timers and state end", "addr", l.addr)
	return c
}

// dropOut forgets the outgoing stream to a, if any, and returns it (its
// sender is stopped once the batch commits).
func (l *loop) dropOut(a node.Addr) *outStream {
	o := l.out[a]
	delete(l.out, a)
	if o != nil {
		o.mu.Lock()
		o.dead = true
		l.log.unref(o.q)
		o.q = nil
		o.mu.Unlock()
	}
	return o
}

func (s *inStream) reset() {
	s.mu.Lock()
	s.sid, s.fresh, s.enq, s.persisted = 0, false, 0, 0
	s.bumpLocked()
	s.mu.Unlock()
}

// current reports whether a stream message from from with stream id sid
// belongs to the live stream (not one that ended since it was queued).
func (l *loop) current(from node.Addr, sid uint64) bool {
	s := l.inStream(from)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sid == sid
}

func (l *loop) noteIncarnation() {
	if x, ok := l.n.(node.Incarnated); ok {
		l.inc.Store(x.Incarnation())
	}
}

// learn runs after each handler. If the node now addresses a peer at a
// newer incarnation (node.Peered), it notes the incarnation and ends the
// streams between this node and the peer's older incarnation: a reset
// marker goes into the handler's streams at mark, before what the handler
// streamed.
func (l *loop) learn(ctx *hctx, mark int, rd *ready) {
	p, ok := l.n.(node.Peered)
	if !ok || p.PeerVersion() == l.peerVer {
		return
	}
	l.peerVer = p.PeerVersion()
	c := &rd.inc
	var resets []node.Addr
	l.mu.Lock()
	p.PeerIncarnations(func(a node.Addr, inc uint64) {
		old := l.peerInc[a]
		if a == l.addr || inc <= old {
			return
		}
		l.peerInc[a] = inc
		if c.peers == nil {
			c.peers = map[node.Addr]uint64{}
		}
		c.peers[a] = inc
		if inc > max(old, 1) {
			resets = append(resets, a)
		}
	})
	ins := map[node.Addr]*inStream{}
	for _, a := range resets {
		if s, ok := l.in[a]; ok {
			ins[a] = s
		}
	}
	l.mu.Unlock()
	for _, a := range resets {
		// Only streams with an older incarnation of a end: one the new
		// incarnation opened already (before this node learned of it)
		// stays.
		inc := l.peerIncOf(a)
		if o := l.out[a]; o == nil || max(o.toInc, 1) < inc {
			ctx.streams = slices.Insert(ctx.streams, mark, effect{to: a}) // m nil: a new stream
			c.outs = append(c.outs, a)
		}
		if s := ins[a]; s != nil {
			s.mu.Lock()
			old := s.sid != 0 && max(s.fromInc, 1) < inc
			s.mu.Unlock()
			if old {
				c.ins = append(c.ins, a)
				delete(rd.acks, a)
				s.reset()
			}
		}
		l.h.log.Info("peer has a new incarnation; streams with its old one end", "addr", l.addr, "peer", a, "inc", inc)
	}
}

func (l *loop) peerIncOf(a node.Addr) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peerInc[a]
}

// checkHello refuses a stream between incarnations that do not match
// (see the comment at the top).
func (l *loop) checkHello(from node.Addr, fromInc, toInc uint64) error {
	if own := l.inc.Load(); own != 0 {
		want := max(toInc, 1)
		if want != own {
			return status.Errorf(codes.FailedPrecondition, "hello.to_inc: stream for incarnation %d of %s, which is incarnation %d", want, l.addr, own)
		}
	}
	if known := l.peerIncOf(from); fromInc != 0 && fromInc < known {
		return status.Errorf(codes.FailedPrecondition, "hello.from_inc: incarnation %d of %s has ended (%d is current)", fromInc, from, known)
	}
	return nil
}

// restorePeers reads back the peers' incarnations. Before Start only.
func (l *loop) restorePeers() error {
	pre := append(key("k", string(l.addr)), 0)
	return l.h.opts.Store.scan(pre, func(k, v []byte) error {
		if len(v) == 8 {
			l.peerInc[node.Addr(k[len(pre):])] = binary.BigEndian.Uint64(v)
		}
		return nil
	})
}

// missing finds or makes the node for a message to an address that has
// none here (Options.NewNode, Options.Inbound).
func (h *Host) missing(from, to node.Addr, m node.Message) *loop {
	if h.opts.NewNode == nil {
		if h.opts.Inbound != nil {
			h.opts.Inbound(from, to, m)
		}
		return nil
	}
	n := h.opts.NewNode(to, m)
	if n == nil {
		return nil
	}
	l, err := h.addLive(to, n)
	if err != nil {
		h.log.Error("adding node", "addr", to, "err", err)
		return nil
	}
	return l
}
