package nbd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func testServer(mem *memBackend, readOnly bool) *Server {
	return &Server{Exports: []Export{
		{Name: "disk", Description: "test disk", Size: uint64(len(mem.data)), ReadOnly: readOnly, PreferredBlockSize: 512, Backend: mem},
		{Name: "other", Size: 1024, Backend: newMem(1024)},
	}, MaxPayload: 1 << 16}
}

func TestNegotiationOptions(t *testing.T) {
	c := startSession(t, testServer(newMem(4096), false))
	c.hello(flagCFixedNewstyle)

	c.option(optList, nil)
	var names []string
	for {
		r := c.optReply()
		if r.code != optList {
			t.Fatalf("reply to option %d", r.code)
		}
		if r.typ == repAck {
			break
		}
		if r.typ != repServer {
			t.Fatalf("NBD_OPT_LIST reply type %#x", r.typ)
		}
		n := binary.BigEndian.Uint32(r.data)
		names = append(names, string(r.data[4:4+n])+"|"+string(r.data[4+n:]))
	}
	if strings.Join(names, ",") != "disk|test disk,other|" {
		t.Fatalf("exports %q", names)
	}
	c.option(optList, []byte{1})
	if r := c.optReply(); r.typ != repErrInvalid {
		t.Fatalf("NBD_OPT_LIST with data: %#x", r.typ)
	}

	c.option(optInfo, infoData("nope"))
	if r := c.optReply(); r.typ != repErrUnknown {
		t.Fatalf("NBD_OPT_INFO of an unknown export: %#x", r.typ)
	}
	c.option(optInfo, []byte{0, 0, 0, 9, 'x'})
	if r := c.optReply(); r.typ != repErrInvalid {
		t.Fatalf("malformed NBD_OPT_INFO: %#x", r.typ)
	}
	c.option(optStructuredReply, nil)
	if r := c.optReply(); r.typ != repErrUnsup {
		t.Fatalf("NBD_OPT_STRUCTURED_REPLY: %#x", r.typ)
	}
	c.option(99, []byte("whatever"))
	if r := c.optReply(); r.typ != repErrUnsup || r.code != 99 {
		t.Fatalf("unknown option: %+v", r)
	}
	c.option(optList, make([]byte, maxOptionLen+1))
	if r := c.optReply(); r.typ != repErrTooBig {
		t.Fatalf("oversized option: %#x", r.typ)
	}

	c.option(optInfo, infoData("disk", infoBlockSize, infoName, infoDescription, 999))
	got := map[uint16][]byte{}
	for {
		r := c.optReply()
		if r.typ == repAck {
			break
		}
		if r.typ != repInfo {
			t.Fatalf("NBD_OPT_INFO reply %#x", r.typ)
		}
		got[binary.BigEndian.Uint16(r.data)] = r.data[2:]
	}
	exp := got[infoExport]
	if len(exp) != 10 || binary.BigEndian.Uint64(exp) != 4096 {
		t.Fatalf("NBD_INFO_EXPORT %x", exp)
	}
	want := uint16(tflagHasFlags | tflagSendFlush | tflagSendFUA | tflagSendTrim | tflagWriteZeroes | tflagCanMultiConn)
	if f := binary.BigEndian.Uint16(exp[8:]); f != want {
		t.Fatalf("transmission flags %#x, want %#x", f, want)
	}
	bs := got[infoBlockSize]
	if len(bs) != 12 || binary.BigEndian.Uint32(bs) != 1 || binary.BigEndian.Uint32(bs[4:]) != 512 || binary.BigEndian.Uint32(bs[8:]) != 1<<16 {
		t.Fatalf("NBD_INFO_BLOCK_SIZE %x", bs)
	}
	if string(got[infoName]) != "disk" || string(got[infoDescription]) != "test disk" || len(got) != 4 {
		t.Fatalf("infos %v", got)
	}

	// Still negotiating after NBD_OPT_INFO: abort ends the session.
	c.option(optAbort, nil)
	if r := c.optReply(); r.typ != repAck {
		t.Fatalf("NBD_OPT_ABORT: %#x", r.typ)
	}
	if err := <-c.done; err != nil {
		t.Fatalf("session after abort: %v", err)
	}
}

func TestExportName(t *testing.T) {
	for _, noZeroes := range []bool{false, true} {
		c := startSession(t, testServer(newMem(4096), true))
		flags := uint32(flagCFixedNewstyle)
		if noZeroes {
			flags |= flagCNoZeroes
		}
		c.hello(flags)
		c.option(optExportName, []byte("disk"))
		b := c.read(10)
		if binary.BigEndian.Uint64(b) != 4096 || binary.BigEndian.Uint16(b[8:])&tflagReadOnly == 0 {
			t.Fatalf("export reply %x", b)
		}
		if !noZeroes && !bytes.Equal(c.read(124), make([]byte, 124)) {
			t.Fatal("no 124 zero bytes")
		}
		// The session is in transmission: a read works.
		errno, data := c.call(0, cmdRead, 0, 4, nil)
		must(t, errno, "read")
		if !bytes.Equal(data, make([]byte, 4)) {
			t.Fatalf("read %x", data)
		}
	}
	// An unknown name ends the session.
	c := startSession(t, testServer(newMem(4096), false))
	c.hello(flagCFixedNewstyle)
	c.option(optExportName, []byte("nope"))
	if err := <-c.done; !errors.Is(err, errProtocol) {
		t.Fatalf("unknown export: %v", err)
	}
}

func TestBadClientFlags(t *testing.T) {
	c := startSession(t, testServer(newMem(4096), false))
	c.hello(1 << 5)
	if err := <-c.done; !errors.Is(err, errProtocol) {
		t.Fatalf("unknown client flags: %v", err)
	}
}

func TestCommands(t *testing.T) {
	mem := newMem(4096)
	c := startSession(t, testServer(mem, false))
	if size, flags := c.goExport("disk"); size != 4096 || flags&tflagReadOnly != 0 {
		t.Fatalf("export size %d flags %#x", size, flags)
	}
	payload := bytes.Repeat([]byte("amalgam!"), 100)
	must(t, func() uint32 { e, _ := c.call(0, cmdWrite, 1000, uint32(len(payload)), payload); return e }(), "write")
	errno, got := c.call(0, cmdRead, 1000, uint32(len(payload)), nil)
	must(t, errno, "read")
	if !bytes.Equal(got, payload) {
		t.Fatal("read back differs from what was written")
	}
	errno, _ = c.call(cmdFlagFUA, cmdWrite, 0, 3, []byte("fua"))
	must(t, errno, "FUA write")
	if f := mem.fua; len(f) != 2 || f[0] || !f[1] {
		t.Fatalf("FUA reached the backend as %v", f)
	}
	errno, _ = c.call(0, cmdTrim, 1000, 8, nil)
	must(t, errno, "trim")
	errno, _ = c.call(cmdFlagNoHole, cmdWriteZeroes, 1008, 8, nil)
	must(t, errno, "write zeroes")
	_, got = c.call(0, cmdRead, 998, 20, nil)
	if want := append(append([]byte{0, 0}, make([]byte, 16)...), "am"...); !bytes.Equal(got, want) {
		t.Fatalf("after trim and write zeroes: %q", got)
	}
	errno, _ = c.call(0, cmdFlush, 0, 0, nil)
	must(t, errno, "flush")
	if mem.flushes != 1 {
		t.Fatalf("%d backend flushes", mem.flushes)
	}

	for _, tc := range []struct {
		name         string
		flags, cmd   uint16
		offset       uint64
		length       uint32
		data         []byte
		want         uint32
		wantUnchange bool
	}{
		{"read past the end", 0, cmdRead, 4090, 7, nil, errInval, false},
		{"read at a huge offset", 0, cmdRead, 1 << 63, 1, nil, errInval, false},
		{"read larger than the maximum payload", 0, cmdRead, 0, 1<<16 + 1, nil, errInval, false},
		{"write past the end", 0, cmdWrite, 4095, 2, []byte("xx"), errNoSpc, true},
		{"trim past the end", 0, cmdTrim, 4000, 100, nil, errInval, true},
		{"zeroes past the end", 0, cmdWriteZeroes, 4000, 100, nil, errNoSpc, true},
		{"unknown command", 0, 9, 0, 0, nil, errInval, false},
		{"unknown flag", 1 << 7, cmdRead, 0, 1, nil, errInval, false},
		{"no-hole on a write", cmdFlagNoHole, cmdWrite, 0, 1, []byte("x"), errInval, true},
	} {
		before := append([]byte(nil), mem.data...)
		if errno, _ := c.call(tc.flags, tc.cmd, tc.offset, tc.length, tc.data); errno != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, errno, tc.want)
		}
		if !bytes.Equal(before, mem.data) {
			t.Errorf("%s changed the export", tc.name)
		}
	}
	// The session still works, and NBD_CMD_DISC ends it cleanly.
	errno, _ = c.call(0, cmdRead, 0, 1, nil)
	must(t, errno, "read after errors")
	c.send(0, cmdDisc, 1, 0, 0, nil)
	if err := <-c.done; err != nil {
		t.Fatalf("after NBD_CMD_DISC: %v", err)
	}
	if _, err := c.conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection after NBD_CMD_DISC: %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	mem := newMem(4096)
	c := startSession(t, testServer(mem, true))
	if _, flags := c.goExport("disk"); flags&tflagReadOnly == 0 {
		t.Fatalf("flags %#x", flags)
	}
	for _, cmd := range []uint16{cmdWrite, cmdTrim, cmdWriteZeroes} {
		var data []byte
		if cmd == cmdWrite {
			data = []byte("x")
		}
		if errno, _ := c.call(0, cmd, 0, 1, data); errno != errPerm {
			t.Errorf("command %d on a read-only export: error %d", cmd, errno)
		}
	}
	if mem.data[0] != 0 {
		t.Fatal("a read-only export was written")
	}
}

func TestOversizedWriteDisconnects(t *testing.T) {
	c := startSession(t, testServer(newMem(1<<20), false))
	c.goExport("disk")
	c.send(0, cmdWrite, 1, 0, 1<<16+1, nil)
	if err := <-c.done; !errors.Is(err, errProtocol) {
		t.Fatalf("write above the maximum payload: %v", err)
	}
}

// Requests run concurrently and replies leave as they finish: a read held
// in the backend does not hold up the requests behind it.
func TestRepliesOutOfOrder(t *testing.T) {
	mem := newMem(4096)
	hold := mem.holdRequests(0)
	c := startSession(t, testServer(mem, false))
	c.goExport("disk")
	c.send(0, cmdRead, 1, 0, 8, nil) // held
	<-mem.entered
	c.send(0, cmdWrite, 2, 100, 3, []byte("abc"))
	if cookie, errno := c.reply(); cookie != 2 || errno != 0 {
		t.Fatalf("first reply: cookie %d error %d, want the write (2)", cookie, errno)
	}
	close(hold)
	if cookie, errno := c.reply(); cookie != 1 || errno != 0 {
		t.Fatalf("second reply: cookie %d error %d", cookie, errno)
	}
	c.read(8)
}

// A flush is answered only after every write received before it.
func TestFlushWaitsForEarlierWrites(t *testing.T) {
	mem := newMem(4096)
	hold := mem.holdRequests(0)
	c := startSession(t, testServer(mem, false))
	c.goExport("disk")
	c.send(0, cmdWrite, 1, 0, 4, []byte("data"))
	<-mem.entered
	c.send(0, cmdFlush, 2, 0, 0, nil)
	c.send(0, cmdWrite, 3, 8, 4, []byte("more")) // not held, after the flush
	if cookie, errno := c.reply(); cookie != 3 || errno != 0 {
		t.Fatalf("first reply: cookie %d error %d, want the unheld write (3)", cookie, errno)
	}
	replied := make(chan uint64, 2)
	go func() {
		for range 2 {
			h := make([]byte, 16)
			if _, err := io.ReadFull(c.conn, h); err != nil {
				close(replied)
				return
			}
			replied <- binary.BigEndian.Uint64(h[8:])
		}
	}()
	select {
	case cookie := <-replied:
		t.Fatalf("reply to %d while the write before the flush is held", cookie)
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	if a, b := <-replied, <-replied; a != 1 || b != 2 {
		t.Fatalf("replies %d then %d: want the held write (1) before the flush (2)", a, b)
	}
}

func TestManyInFlight(t *testing.T) {
	mem := newMem(1 << 20)
	c := startSession(t, testServer(mem, false))
	c.goExport("disk")
	const n = 200
	go func() {
		for i := range n {
			block := bytes.Repeat([]byte{byte(i)}, 4096)
			c.send(0, cmdWrite, uint64(i), uint64(i)*4096%(1<<20), 4096, block)
		}
	}()
	seen := map[uint64]bool{}
	for range n {
		cookie, errno := c.reply()
		must(t, errno, "write")
		if seen[cookie] {
			t.Fatalf("two replies for cookie %d", cookie)
		}
		seen[cookie] = true
	}
	for i := range 200 {
		if mem.data[i*4096%(1<<20)] != byte(i) {
			t.Fatalf("write %d missing", i)
		}
	}
}
