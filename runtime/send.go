package runtime

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Unordered messages. A node's sends go, once its batch is released, to
// Options.Local or a RunClient mailbox here, or else through a sender per
// destination host, which batches them: each batch is one message on a
// long-lived connection to that host if the transport is a SendStreamer,
// or else one transport Send.

// sender batches unordered messages to one host. When its queue is full,
// or a batch fails, messages are dropped: unordered messages may be lost.
type sender struct {
	h    *Host
	addr string
	q    chan *wire.Envelope
}

func (h *Host) send(from, to node.Addr, m node.Message) {
	if h.steer.drops(from, to, m) {
		return
	}
	if h.toMailbox(from, to, m) {
		return
	}
	if h.opts.Local != nil && h.opts.Local(from, to, m) {
		return
	}
	p, err := wire.MessageToProto(m)
	if err != nil {
		h.log.Error("dropping unencodable message", "to", to, "err", err)
		return
	}
	if h.opts.Multicast != nil {
		if hosts := h.opts.Multicast(to); len(hosts) > 0 {
			for _, a := range hosts {
				h.sendTo(a, from, to, p)
			}
			return
		}
	}
	addr, ok := h.opts.Resolve(to)
	if !ok {
		h.log.Debug("dropping message to unknown address", "to", to)
		return
	}
	h.sendTo(addr, from, to, p)
}

// sendTo queues an encoded unordered message for the host at addr.
func (h *Host) sendTo(addr string, from, to node.Addr, p *wire.Message) {
	h.mu.Lock()
	s, ok := h.senders[addr]
	if !ok && !h.stopped {
		s = &sender{h: h, addr: addr, q: make(chan *wire.Envelope, 4096)}
		h.senders[addr] = s
		h.wg.Go(s.run)
	}
	h.mu.Unlock()
	if s == nil {
		return
	}
	select {
	case s.q <- &wire.Envelope{From: string(from), To: string(to), Msg: p}:
	default:
		countSendDrops(1)
	}
}

// Reconnection of a sender's connection: the pause after a failure
// starts at minSendBackoff and doubles up to maxSendBackoff; the batch
// in hand waits for it and is dropped if the connection cannot be
// opened. (gRPC's own reconnection backoff is wire.ReconnectBackoff.)
const (
	minSendBackoff = 10 * time.Millisecond
	maxSendBackoff = 250 * time.Millisecond
)

func (s *sender) run() {
	st, ok := s.h.tr.(SendStreamer)
	if !ok {
		s.runSends()
		return
	}
	var (
		conn   SendConn
		cancel context.CancelFunc = func() {}
		sent   int                // batches on conn
		wait   time.Duration
		retry  = minSendBackoff
	)
	defer func() { cancel() }()
	for {
		batch, size := s.next()
		if batch == nil {
			return
		}
		if conn == nil {
			if wait > 0 && !s.pause(wait) {
				return
			}
			c, cl, err := s.open(st)
			if err != nil {
				s.dropped(batch, err)
				wait, retry = jitter(retry), min(2*retry, maxSendBackoff)
				continue
			}
			conn, cancel, sent, wait = c, cl, 0, 0
		}
		if err := conn.Send(&wire.SendRequest{Envelopes: batch}); err != nil {
			if _, cerr := conn.CloseAndRecv(); cerr != nil {
				err = cerr
			}
			cancel()
			conn = nil
			s.dropped(batch, err)
			if sent > 0 {
				retry = minSendBackoff
			}
			wait, retry = jitter(retry), min(2*retry, maxSendBackoff)
			continue
		}
		sent++
		countSend(len(batch), size)
	}
}

// open opens the connection to the host, not waiting over
// handshakeTimeout for it.
func (s *sender) open(st SendStreamer) (SendConn, context.CancelFunc, error) {
	ctx, cancel := context.WithCancel(s.h.ctx)
	guard := time.AfterFunc(handshakeTimeout, cancel)
	conn, err := st.SendStream(ctx, s.addr)
	if !guard.Stop() && err == nil {
		err = errors.New("opening the connection took over " + handshakeTimeout.String())
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return conn, cancel, nil
}

// pause waits d; it reports false if the host stopped.
func (s *sender) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.h.ctx.Done():
		return false
	}
}

func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

func (s *sender) dropped(batch []*wire.Envelope, err error) {
	countSendDrops(len(batch))
	s.h.log.Debug("unordered send failed; messages lost", "to", s.addr, "n", len(batch), "err", err)
}

// runSends sends each batch with a transport Send, waiting for it.
func (s *sender) runSends() {
	for {
		batch, size := s.next()
		if batch == nil {
			return
		}
		ctx, cancel := context.WithTimeout(s.h.ctx, 2*time.Second)
		err := s.h.tr.Send(ctx, s.addr, batch)
		cancel()
		if err != nil {
			s.dropped(batch, err)
			continue
		}
		countSend(len(batch), size)
	}
}

// next waits for a queued message and returns it with those queued
// behind it, up to 256 messages and half the gRPC message limit, and
// their encoded size; it returns nil when the host stops.
func (s *sender) next() ([]*wire.Envelope, int) {
	limit := wire.MaxMessageSize(s.h.opts.BlockSize) / 2
	var batch []*wire.Envelope
	select {
	case e := <-s.q:
		batch = append(batch, e)
	case <-s.h.ctx.Done():
		return nil, 0
	}
	size := proto.Size(batch[0])
	for len(batch) < 256 && size < limit {
		select {
		case e := <-s.q:
			batch = append(batch, e)
			size += proto.Size(e)
		default:
			return batch, size
		}
	}
	return batch, size
}

// inbound is what a transport hands this host's traffic to.
type inbound struct{ h *Host }

// Receive takes unordered messages from another host.
func (in inbound) Receive(envs []*wire.Envelope) {
	h := in.h
	for _, e := range envs {
		to := node.Addr(e.GetTo())
		m, err := wire.MessageFromProto(e.GetMsg())
		if err != nil {
			continue
		}
		if h.toMailbox(node.Addr(e.GetFrom()), to, m) {
			continue
		}
		l := h.loop(to)
		if l == nil {
			l = h.missing(node.Addr(e.GetFrom()), to, m)
		}
		if l == nil {
			continue
		}
		select {
		case l.inbox <- event{from: node.Addr(e.GetFrom()), m: m, posted: stageNow()}:
		default: // overloaded: unordered messages may be lost
		}
	}
}
