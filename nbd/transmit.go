package nbd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// transmit serves requests until the client disconnects. Each request runs
// in its own goroutine (at most MaxInFlight at once, and at most
// 8*MaxPayload bytes of payload held); replies are written whole, one at a
// time, in the order requests finish.
func (s *Server) transmit(ctx context.Context, conn net.Conn, ex *Export) error {
	var (
		wmu      sync.Mutex // guards conn writes and werr
		werr     error
		inflight sync.WaitGroup
		writes   writeSet
	)
	defer inflight.Wait()
	slots := make(chan struct{}, s.maxInFlight())
	mem := newBudget(8 * int64(s.maxPayload()))
	reply := func(cookie uint64, errno uint32, data []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		if werr != nil {
			return
		}
		bufs := net.Buffers{simpleReply(cookie, errno)}
		if errno == 0 && len(data) > 0 {
			bufs = append(bufs, data)
		}
		if _, werr = bufs.WriteTo(conn); werr != nil {
			conn.Close() // the client cannot hear us: stop reading its requests
		}
	}
	br := bufio.NewReaderSize(conn, 256<<10)
	for {
		q, err := readRequestHeader(br)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		size := int64(0)
		if q.cmd == cmdRead || q.cmd == cmdWrite {
			size = int64(q.length)
		}
		if q.cmd == cmdWrite {
			if q.length > s.maxPayload() {
				return fmt.Errorf("%w: write of %d bytes, more than the %d advertised", errProtocol, q.length, s.maxPayload())
			}
			mem.acquire(size)
			q.data = make([]byte, q.length)
			if _, err := io.ReadFull(br, q.data); err != nil {
				mem.release(size)
				return err
			}
		}
		if q.cmd == cmdDisc {
			mem.release(size)
			return nil // the deferred Wait finishes what is in flight
		}
		errno := q.check(ex.Size, ex.ReadOnly)
		if errno == 0 && q.cmd == cmdRead && q.length > s.maxPayload() {
			errno = errInval
		}
		if errno != 0 {
			if q.cmd == cmdWrite {
				mem.release(size)
			}
			reply(q.cookie, errno, nil)
			continue
		}
		if q.cmd == cmdRead {
			mem.acquire(size)
		}
		slots <- struct{}{}
		var done chan struct{}
		var prior []chan struct{}
		switch q.cmd {
		case cmdWrite, cmdTrim, cmdWriteZeroes:
			done = writes.start()
		case cmdFlush:
			prior = writes.snapshot()
		}
		inflight.Go(func() {
			errno, data := s.serve(ctx, ex, q, prior)
			reply(q.cookie, errno, data)
			if done != nil {
				writes.finish(done) // after its reply: a flush is answered after it
			}
			mem.release(size)
			<-slots
		})
	}
}

// serve runs one valid request and returns its error value and, for a
// read, the data.
func (s *Server) serve(ctx context.Context, ex *Export, q request, prior []chan struct{}) (uint32, []byte) {
	var data []byte
	var err error
	fua := q.flags&cmdFlagFUA != 0
	off := int64(q.offset)
	switch q.cmd {
	case cmdRead:
		data = make([]byte, q.length)
		err = ex.Backend.ReadAt(ctx, data, off)
	case cmdWrite:
		err = ex.Backend.WriteAt(ctx, q.data, off, fua)
	case cmdTrim, cmdWriteZeroes:
		err = ex.Backend.Zero(ctx, off, int64(q.length), fua)
	case cmdFlush:
		for _, c := range prior {
			<-c
		}
		err = ex.Backend.Flush(ctx)
	}
	if err != nil {
		s.log().Warn("nbd request failed", "export", ex.Name, "cmd", q.cmd, "offset", q.offset, "length", q.length, "err", err)
		return errIO, nil
	}
	return 0, data
}

// writeSet tracks the writes in flight, so that a flush can wait for every
// write received before it, and is answered after them (a stronger promise
// than NBD's, which covers only writes already answered).
type writeSet struct {
	mu  sync.Mutex
	set map[chan struct{}]struct{}
}

func (w *writeSet) start() chan struct{} {
	c := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.set == nil {
		w.set = map[chan struct{}]struct{}{}
	}
	w.set[c] = struct{}{}
	return c
}

func (w *writeSet) finish(c chan struct{}) {
	w.mu.Lock()
	delete(w.set, c)
	w.mu.Unlock()
	close(c)
}

func (w *writeSet) snapshot() []chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]chan struct{}, 0, len(w.set))
	for c := range w.set {
		out = append(out, c)
	}
	return out
}

// budget bounds the payload bytes held at once. A request larger than the
// whole budget waits until nothing else is held.
type budget struct {
	mu    sync.Mutex
	cond  sync.Cond
	total int64
	left  int64
}

func newBudget(n int64) *budget {
	b := &budget{total: n, left: n}
	b.cond.L = &b.mu
	return b
}

func (b *budget) acquire(n int64) {
	n = min(n, b.total)
	b.mu.Lock()
	for b.left < n {
		b.cond.Wait()
	}
	b.left -= n
	b.mu.Unlock()
}

func (b *budget) release(n int64) {
	n = min(n, b.total)
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
	b.cond.Broadcast()
}
