package nbd

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// memBackend is a Backend in memory. A test may hold writes or reads at
// hold until it closes the channel.
type memBackend struct {
	mu      sync.Mutex
	data    []byte
	flushes int
	fua     []bool
	// Reads and writes at offset holdAt wait for hold to close, after
	// saying so on entered.
	holdAt  int64
	hold    chan struct{}
	entered chan struct{}
}

func newMem(size int) *memBackend { return &memBackend{data: make([]byte, size), holdAt: -1} }

// holdRequests makes requests at offset off wait until the returned
// channel closes.
func (m *memBackend) holdRequests(off int64) chan struct{} {
	m.holdAt, m.hold, m.entered = off, make(chan struct{}), make(chan struct{}, 16)
	return m.hold
}

func (m *memBackend) wait(ctx context.Context, off int64) error {
	if m.hold == nil || off != m.holdAt {
		return nil
	}
	m.entered <- struct{}{}
	select {
	case <-m.hold:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *memBackend) ReadAt(ctx context.Context, p []byte, off int64) error {
	if err := m.wait(ctx, off); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	copy(p, m.data[off:])
	return nil
}

func (m *memBackend) WriteAt(ctx context.Context, p []byte, off int64, fua bool) error {
	if err := m.wait(ctx, off); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	copy(m.data[off:], p)
	m.fua = append(m.fua, fua)
	return nil
}

func (m *memBackend) Zero(ctx context.Context, off, length int64, fua bool) error {
	return m.WriteAt(ctx, make([]byte, length), off, fua)
}

func (m *memBackend) Flush(context.Context) error {
	m.mu.Lock()
	m.flushes++
	m.mu.Unlock()
	return nil
}

// testClient speaks the client side of the protocol over a pipe.
type testClient struct {
	t    *testing.T
	conn net.Conn
	done chan error // ServeConn's result
}

// safetyStop turns a hung session into a failed read: a hang guard, long
// enough that a loaded machine never reaches it.
const safetyStop = 5 * time.Minute

func startSession(t *testing.T, s *Server) *testClient {
	t.Helper()
	a, b := net.Pipe()
	c := &testClient{t: t, conn: a, done: make(chan error, 1)}
	go func() { c.done <- s.ServeConn(context.Background(), b) }()
	t.Cleanup(func() { _ = a.Close() })
	_ = a.SetDeadline(time.Now().Add(safetyStop))
	return c
}

func (c *testClient) read(n int) []byte {
	c.t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c.conn, b); err != nil {
		c.t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

func (c *testClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("writing: %v", err)
	}
}

// hello reads the server's greeting and sends client flags.
func (c *testClient) hello(flags uint32) {
	c.t.Helper()
	h := c.read(18)
	if binary.BigEndian.Uint64(h) != magicNBD || binary.BigEndian.Uint64(h[8:]) != magicOpt ||
		binary.BigEndian.Uint16(h[16:]) != flagFixedNewstyle|flagNoZeroes {
		c.t.Fatalf("greeting %x", h)
	}
	c.write(binary.BigEndian.AppendUint32(nil, flags))
}

func (c *testClient) option(code uint32, data []byte) {
	c.t.Helper()
	b := binary.BigEndian.AppendUint64(nil, magicOpt)
	b = binary.BigEndian.AppendUint32(b, code)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	c.write(append(b, data...))
}

type optRep struct {
	code, typ uint32
	data      []byte
}

func (c *testClient) optReply() optRep {
	c.t.Helper()
	h := c.read(20)
	if binary.BigEndian.Uint64(h) != magicOptReply {
		c.t.Fatalf("option reply magic %x", h[:8])
	}
	r := optRep{code: binary.BigEndian.Uint32(h[8:]), typ: binary.BigEndian.Uint32(h[12:])}
	r.data = c.read(int(binary.BigEndian.Uint32(h[16:])))
	return r
}

func infoData(name string, infos ...uint16) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
	b = append(b, name...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(infos)))
	for _, i := range infos {
		b = binary.BigEndian.AppendUint16(b, i)
	}
	return b
}

// goExport negotiates name with NBD_OPT_GO and returns the size and
// transmission flags.
func (c *testClient) goExport(name string) (uint64, uint16) {
	c.t.Helper()
	c.hello(flagCFixedNewstyle | flagCNoZeroes)
	c.option(optGo, infoData(name))
	var size uint64
	var flags uint16
	for {
		r := c.optReply()
		switch r.typ {
		case repInfo:
			if binary.BigEndian.Uint16(r.data) == infoExport {
				size, flags = binary.BigEndian.Uint64(r.data[2:]), binary.BigEndian.Uint16(r.data[10:])
			}
		case repAck:
			return size, flags
		default:
			c.t.Fatalf("NBD_OPT_GO reply type %#x %q", r.typ, r.data)
		}
	}
}

func encodeRequest(flags, cmd uint16, cookie, offset uint64, length uint32, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, magicRequest)
	b = binary.BigEndian.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint16(b, cmd)
	b = binary.BigEndian.AppendUint64(b, cookie)
	b = binary.BigEndian.AppendUint64(b, offset)
	b = binary.BigEndian.AppendUint32(b, length)
	return append(b, data...)
}

func (c *testClient) send(flags, cmd uint16, cookie, offset uint64, length uint32, data []byte) {
	c.t.Helper()
	c.write(encodeRequest(flags, cmd, cookie, offset, length, data))
}

// reply reads one simple reply header: cookie and error.
func (c *testClient) reply() (uint64, uint32) {
	c.t.Helper()
	h := c.read(16)
	if binary.BigEndian.Uint32(h) != magicSimpleRepl {
		c.t.Fatalf("reply magic %x", h[:4])
	}
	return binary.BigEndian.Uint64(h[8:]), binary.BigEndian.Uint32(h[4:])
}

// call sends a request and waits for its reply (nothing else in flight).
func (c *testClient) call(flags, cmd uint16, offset uint64, length uint32, data []byte) (uint32, []byte) {
	c.t.Helper()
	c.send(flags, cmd, 77, offset, length, data)
	cookie, errno := c.reply()
	if cookie != 77 {
		c.t.Fatalf("reply for cookie %d, want 77", cookie)
	}
	if cmd == cmdRead && errno == 0 {
		return 0, c.read(int(length))
	}
	return errno, nil
}

func must(t *testing.T, errno uint32, what string) {
	t.Helper()
	if errno != 0 {
		t.Fatalf("%s: error %d", what, errno)
	}
}
