package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Ordered streams.
//
// The stream from -> to is a sequence of messages numbered 1, 2, 3, ...
// under a stream id the sender draws at random when the stream starts.
// The sender keeps every message until the receiver acknowledges it, and
// carries the stream over an ordered connection of the transport (a
// bidirectional gRPC stream in production): a hello (from, to, stream id)
// answered by the receiver's last acknowledged number, then every message
// after that, in order. When the connection breaks, the
// sender reconnects and resumes after the last acknowledgement; the
// receiver drops numbers it has already taken. So the stream is FIFO,
// lossless and exactly-once across connection failures.
//
// The receiver acknowledges a message only once the batch that handled it
// is committed (with its effects, in durable mode), and the sender's
// unacknowledged messages are in its store too, so with a store the stream
// also survives either process being killed and restarted. A receiver that
// sees a new stream id (the sender lost its state: memory mode) starts the
// stream over.

type outEntry struct {
	seq  uint64
	m    *wire.Message
	size int    // proto.Size(m)
	body uint64 // its stream log record (streamlog.go)
}

// outStream is the sending side of from -> to.
type outStream struct {
	l       *loop
	to      node.Addr
	sid     uint64
	toInc   uint64 // the receiver's incarnation this stream is for (0: unknown, that is 1)
	next    uint64 // next number to assign; the loop goroutine only
	started bool
	ctx     context.Context // ends when the stream is dropped or the host stops
	cancel  context.CancelFunc

	mu     sync.Mutex
	q      []outEntry // unacknowledged, in order
	acked  uint64
	dead   bool // dropped: an incarnation at either end ended (incarnation.go)
	notify chan struct{}
}

// outStream returns the stream to to, creating it. Loop goroutine only (or
// before Start).
func (l *loop) outStream(to node.Addr) *outStream {
	if o, ok := l.out[to]; ok {
		return o
	}
	o := &outStream{l: l, to: to, sid: randomID(), toInc: l.peerIncOf(to), next: 1, notify: make(chan struct{}, 1)}
	l.out[to] = o
	l.mu.Lock()
	l.ackOut[to] = o
	l.mu.Unlock()
	if l.h.started {
		o.start()
	}
	return o
}

func (o *outStream) start() {
	if o.started {
		return
	}
	o.started = true
	o.ctx, o.cancel = context.WithCancel(o.l.h.ctx)
	o.l.h.wg.Add(1)
	go o.run()
}

// stop ends the sender of a dropped stream.
func (o *outStream) stop() {
	if o.cancel != nil {
		o.cancel()
	}
}

func (o *outStream) push(e outEntry) {
	stagePushed(o.sid, e.seq)
	o.mu.Lock()
	if o.dead { // dropped by a later batch before this one was released
		o.mu.Unlock()
		o.l.log.unref([]outEntry{e})
		return
	}
	o.q = append(o.q, e)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// ackTo drops the messages up to a.
func (o *outStream) ackTo(a uint64) {
	o.mu.Lock()
	i := 0
	for i < len(o.q) && o.q[i].seq <= a {
		i++
	}
	if i > 0 {
		o.l.log.unref(o.q[:i])
		o.q = append(o.q[:0], o.q[i:]...)
	}
	o.acked = max(o.acked, a)
	o.mu.Unlock()
}

func (o *outStream) run() {
	h := o.l.h
	defer h.wg.Done()
	backoff := 10 * time.Millisecond
	for {
		if u := h.steer.paused(o.l.addr, o.to); !u.IsZero() { // steering (steer.go)
			select {
			case <-time.After(time.Until(u)):
			case <-o.ctx.Done():
				return
			}
			continue
		}
		progressed, err := o.session()
		if o.ctx.Err() != nil {
			return
		}
		h.opts.Metrics.StreamReconnect(o.l.addr, o.to)
		h.log.Debug("stream broken; reconnecting", "from", o.l.addr, "to", o.to, "err", err)
		if progressed {
			backoff = 10 * time.Millisecond
		}
		d := backoff/2 + time.Duration(rand.Int64N(int64(backoff)))
		select {
		case <-time.After(d):
		case <-o.ctx.Done():
			return
		}
		backoff = min(2*backoff, maxStreamBackoff)
	}
}

// errPaused breaks a session whose stream a filter pauses (steer.go).
var errPaused = errors.New("stream paused by an event filter")

// handshakeTimeout bounds waiting for a connection and the receiver's
// first acknowledgement; maxStreamBackoff bounds the pause between
// sessions. (gRPC's own reconnection backoff is wire.ReconnectBackoff.)
const (
	handshakeTimeout = 2 * time.Second
	maxStreamBackoff = 250 * time.Millisecond
)

// session carries the stream over one gRPC stream until it breaks. It
// reports whether the receiver acknowledged anything.
func (o *outStream) session() (bool, error) {
	h := o.l.h
	addr, ok := h.opts.Resolve(o.to)
	if !ok {
		return false, fmt.Errorf("no address for %s", o.to)
	}
	ctx, cancel := context.WithCancel(o.ctx)
	defer cancel()
	// The handshake is bounded, so the address is resolved again now and
	// then.
	handshake := time.AfterFunc(handshakeTimeout, cancel)
	st, err := h.tr.Stream(ctx, addr)
	if err != nil {
		return false, err
	}
	hello := &wire.StreamHello{From: string(o.l.addr), To: string(o.to), StreamId: o.sid,
		FromInc: o.l.inc.Load(), ToInc: o.toInc}
	if err := st.Send(&wire.StreamFrame{Hello: hello}); err != nil {
		return false, err
	}
	first, err := st.Recv()
	if err != nil {
		return false, err
	}
	if !handshake.Stop() {
		return false, fmt.Errorf("stream handshake with %s took over %v", o.to, handshakeTimeout)
	}
	o.ackTo(first.GetAcked())
	errc := make(chan error, 1)
	acks := make(chan struct{}, 1)
	// The receiver of acknowledgements outlives the session until its
	// Recv fails; Stop waits for it, so that none is applied after the
	// host stopped.
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			a, err := st.Recv()
			if err != nil {
				errc <- err
				return
			}
			o.ackTo(a.GetAcked())
			select {
			case acks <- struct{}{}:
			default:
			}
		}
	}()
	progressed := false
	o.mu.Lock()
	cursor := o.acked + 1
	o.mu.Unlock()
	for {
		if frame, size := o.frame(cursor); frame != nil {
			if !h.steer.paused(o.l.addr, o.to).IsZero() {
				return progressed, errPaused
			}
			frame.AckStream, frame.Acked = o.l.ackOfPeer(o.to)
			if err := st.Send(frame); err != nil {
				return progressed, err
			}
			countStreamFrame(len(frame.Msgs), size)
			cursor = frame.Seq + uint64(len(frame.Msgs))
			continue
		}
		select {
		case <-o.notify:
		case <-acks:
			progressed = true
		case err := <-errc:
			return progressed, err
		case <-ctx.Done():
			return progressed, ctx.Err()
		}
	}
}

// ackInterval paces a stream's own acknowledgements: one leaves at most
// this long after the previous one (or after a frame the other way
// carried one, ackOfPeer), covering everything persisted by then. An
// acknowledgement is on no write's path (it lets the sender forget
// messages and delete their stream log records, docs/hosts.md), and on a
// busy stream pacing saves a gRPC message, a write and a read per frame.
const ackInterval = 50 * time.Millisecond

// frameBytes bounds a frame of several messages (one message alone may be
// larger, up to gRPC's limit): a frame is delivered to the receiver's loop
// once it has arrived whole. frameOverhead bounds what a message adds to a
// frame's encoding beyond its own (field tag and length). frameMsgs
// bounds its messages: with whole backlogs in one frame (thousands of
// small messages after a reconnect), TestStreamExactlyOnce under -race,
// whose proxy resets connections every 5-40 ms, delivered a few hundred
// messages a minute; with 64 it finishes in seconds.
const (
	frameBytes    = 1 << 20
	frameOverhead = 16
	frameMsgs     = 64
)

// frame returns the queued messages from number cursor on, up to
// frameBytes, as one frame, and the messages' encoded size; nil if there
// are none.
func (o *outStream) frame(cursor uint64) (*wire.StreamFrame, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.q) == 0 {
		return nil, 0
	}
	cursor = max(cursor, o.q[0].seq)
	i := cursor - o.q[0].seq
	if i >= uint64(len(o.q)) {
		return nil, 0
	}
	q := o.q[i:]
	n, bound := 1, q[0].size+frameOverhead
	for n < len(q) && n < frameMsgs && bound+q[n].size+frameOverhead <= frameBytes {
		bound += q[n].size + frameOverhead
		n++
	}
	msgs := make([]*wire.Message, n)
	size := 0
	for j := range msgs {
		msgs[j] = q[j].m
		size += q[j].size
	}
	return &wire.StreamFrame{Seq: cursor, Msgs: msgs}, size
}

// ackOfPeer is the acknowledgement of the stream from peer that a frame
// to it carries: its stream id and last persisted number (0, 0: none). It
// counts as sent: the stream's acknowledger sends it again only if
// nothing more is persisted within ackInterval (ServeStream). A frame
// that is lost is resent after the reconnect, with the acknowledgement
// as it is then.
func (l *loop) ackOfPeer(peer node.Addr) (sid, acked uint64) {
	l.mu.Lock()
	in := l.in[peer]
	l.mu.Unlock()
	if in == nil {
		return 0, 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.sid == 0 || in.persisted == 0 {
		return 0, 0
	}
	in.toldSid, in.told = in.sid, in.persisted
	return in.sid, in.persisted
}

// ackRiding applies an acknowledgement that came on a frame from peer to
// the stream to it, if it is still that stream.
func (l *loop) ackRiding(peer node.Addr, sid, acked uint64) {
	if sid == 0 {
		return
	}
	l.mu.Lock()
	o := l.ackOut[peer]
	l.mu.Unlock()
	if o != nil && o.sid == sid {
		o.ackTo(acked)
	}
}

// inStream is the receiving side of from -> to.
type inStream struct {
	recvMu sync.Mutex // serializes receivers (an old and a new connection)

	mu        sync.Mutex
	sid       uint64
	fresh     bool   // take whatever number comes first
	enq       uint64 // last number handed to the loop
	persisted uint64 // last number committed: what is acknowledged
	fromInc   uint64 // the sender's incarnation, from its hello (0: unknown)
	changed   chan struct{}
	// told is the last persisted number a frame the other way carried
	// for stream toldSid (ackOfPeer).
	toldSid, told uint64
}

func (l *loop) inStream(from node.Addr) *inStream {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.in[from]
	if !ok {
		s = &inStream{changed: make(chan struct{})}
		l.in[from] = s
	}
	return s
}

func (s *inStream) bumpLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *inStream) setPersisted(sid, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sid == sid && seq > s.persisted {
		s.persisted = seq
		s.bumpLocked()
	}
}

// ServeStream serves an ordered connection from another host: the
// receiving side of one stream.
func (r inbound) ServeStream(st StreamPeer) error {
	h := r.h
	hello, err := st.Recv()
	if err != nil {
		return err
	}
	hl := hello.GetHello()
	if hl == nil || hl.GetStreamId() == 0 {
		return status.Error(codes.InvalidArgument, "hello: the first frame must be a hello with a non-zero stream_id")
	}
	l := h.loop(node.Addr(hl.GetTo()))
	if l == nil {
		return status.Errorf(codes.NotFound, "hello.to: no node %q here", hl.GetTo())
	}
	from, sid := node.Addr(hl.GetFrom()), hl.GetStreamId()
	if err := l.checkHello(from, hl.GetFromInc(), hl.GetToInc()); err != nil {
		return err
	}
	in := l.inStream(from)
	in.mu.Lock()
	if in.sid != sid {
		in.sid, in.fresh, in.enq, in.persisted = sid, true, 0, 0
		in.fromInc = hl.GetFromInc()
		in.bumpLocked()
	}
	acked := in.persisted
	in.mu.Unlock()
	if err := st.Send(&wire.StreamAck{StreamId: sid, Acked: acked}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(st.Context())
	ackErr := make(chan error, 1)
	ackDone := make(chan struct{})
	defer func() { cancel(); <-ackDone }()
	go func() {
		defer close(ackDone)
		sent := acked
		var last time.Time // when the last acknowledgement left
		pace := time.NewTimer(ackInterval)
		pace.Stop()
		for {
			in.mu.Lock()
			if in.sid != sid {
				in.mu.Unlock()
				ackErr <- status.Error(codes.Aborted, "stream superseded")
				return
			}
			p, ch := in.persisted, in.changed
			if in.toldSid == sid && in.told > sent {
				// A frame the other way carried it: it paces the next.
				sent, last = in.told, time.Now()
			}
			in.mu.Unlock()
			if p > sent {
				if wait := ackInterval - time.Since(last); wait > 0 {
					// Paced: this acknowledgement will cover whatever
					// more is persisted meanwhile.
					pace.Reset(wait)
					select {
					case <-pace.C:
					case <-ctx.Done():
						ackErr <- ctx.Err()
						return
					}
					continue
				}
				if err := st.Send(&wire.StreamAck{StreamId: sid, Acked: p}); err != nil {
					ackErr <- err
					return
				}
				countStreamAck()
				sent, last = p, time.Now()
			}
			select {
			case <-ch:
			case <-ctx.Done():
				ackErr <- ctx.Err()
				return
			}
		}
	}()
	for {
		f, err := st.Recv()
		if err != nil {
			return err
		}
		select {
		case err := <-ackErr:
			return err
		default:
		}
		ps := f.GetMsgs()
		if m := f.GetMsg(); m != nil {
			ps = append([]*wire.Message{m}, ps...)
		}
		if len(ps) == 0 {
			return status.Error(codes.InvalidArgument, "frame: no message")
		}
		l.ackRiding(from, f.GetAckStream(), f.GetAcked())
		if err := take(ctx, l, in, from, sid, f.GetSeq(), ps); err != nil {
			return err
		}
	}
}

// take hands the messages of a frame, numbered from seq on, to the loop,
// but for those it already took.
func take(ctx context.Context, l *loop, in *inStream, from node.Addr, sid, seq uint64, ps []*wire.Message) error {
	in.recvMu.Lock()
	defer in.recvMu.Unlock()
	in.mu.Lock()
	if in.sid != sid {
		in.mu.Unlock()
		return status.Error(codes.Aborted, "stream superseded")
	}
	if in.fresh {
		in.enq, in.fresh = seq-1, false
	}
	enq := in.enq
	in.mu.Unlock()
	if seq > enq+1 {
		return status.Errorf(codes.FailedPrecondition, "seq: got %d, want %d", seq, enq+1)
	}
	// ps[:skip] were taken before: a frame resent after a reconnect.
	if skip := enq + 1 - seq; skip < uint64(len(ps)) {
		for i, p := range ps[skip:] {
			m, err := wire.MessageFromProto(p)
			if err != nil {
				return status.Errorf(codes.InvalidArgument, "msgs[%d]: %v", skip+uint64(i), err)
			}
			stagePosted(sid, enq+1)
			if err := l.post(ctx, event{from: from, m: m, sid: sid, seq: enq + 1}); err != nil {
				return err
			}
			enq++
			in.mu.Lock()
			if in.sid == sid {
				in.enq = enq
			}
			in.mu.Unlock()
		}
	}
	return nil
}

// restoreStreams reads back the node's stream state. Before Start only.
func (l *loop) restoreStreams() error {
	s := l.h.opts.Store
	inPre := key("i", string(l.addr), "")
	err := s.scan(inPre, func(k, v []byte) error {
		var inc uint64
		if len(v) == 24 { // with the sender's incarnation
			inc, v = binary.BigEndian.Uint64(v[16:]), v[:16]
		}
		sid, seq, err := unpair(v)
		if err != nil {
			return err
		}
		from := node.Addr(k[len(inPre):])
		l.in[from] = &inStream{sid: sid, enq: seq, persisted: seq, fromInc: inc, changed: make(chan struct{})}
		return nil
	})
	if err != nil {
		return err
	}
	mPre := key("m", string(l.addr), "")
	err = s.scan(mPre, func(k, v []byte) error {
		sid, next, err := unpair(v)
		if err != nil {
			return err
		}
		to := node.Addr(k[len(mPre):])
		l.out[to] = &outStream{l: l, to: to, sid: sid, next: next, notify: make(chan struct{}, 1)}
		l.ackOut[to] = l.out[to]
		return nil
	})
	if err != nil {
		return err
	}
	if err := l.restoreOut(); err != nil {
		return err
	}
	for _, o := range l.out {
		if len(o.q) > 0 {
			o.acked = o.q[0].seq - 1
		} else {
			o.acked = o.next - 1
		}
	}
	return nil
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, x := range b[:8] {
		v = v<<8 | uint64(x)
	}
	return v
}
