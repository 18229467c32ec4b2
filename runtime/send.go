package runtime

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Unordered messages. A node's sends go, once its batch is released, to
// Options.Local or a RunClient mailbox here, or else through a sender per
// destination host, which batches them into one transport Send.

// sender batches unordered messages to one host. When its queue is full,
// messages are dropped: unordered messages may be lost.
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
	}
}

func (s *sender) run() {
	limit := wire.MaxMessageSize(s.h.opts.BlockSize) / 2
	for {
		var batch []*wire.Envelope
		select {
		case e := <-s.q:
			batch = append(batch, e)
		case <-s.h.ctx.Done():
			return
		}
		size := proto.Size(batch[0])
	more:
		for len(batch) < 256 && size < limit {
			select {
			case e := <-s.q:
				batch = append(batch, e)
				size += proto.Size(e)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(s.h.ctx, 2*time.Second)
		err := s.h.tr.Send(ctx, s.addr, batch)
		cancel()
		countSend(len(batch), size)
		if err != nil {
			s.h.log.Debug("unordered send failed; messages lost", "to", s.addr, "n", len(batch), "err", err)
		}
	}
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
