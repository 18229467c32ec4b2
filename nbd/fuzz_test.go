package nbd

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

func FuzzParseInfoRequest(f *testing.F) {
	f.Add(infoData("disk", infoBlockSize, infoName))
	f.Add(infoData(""))
	f.Add([]byte{0, 0, 0, 9, 'x'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0})
	f.Fuzz(func(t *testing.T, d []byte) {
		req, err := parseInfoRequest(d)
		if err != nil {
			return
		}
		// A request that parses re-encodes to the same bytes.
		if got := infoData(req.name, req.infos...); !bytes.Equal(got, d) {
			t.Fatalf("%x parsed to %+v, which encodes as %x", d, req, got)
		}
	})
}

func FuzzRequestHeader(f *testing.F) {
	f.Add(encodeRequest(0, cmdRead, 1, 0, 512, nil))
	f.Add(encodeRequest(cmdFlagFUA, cmdWrite, 2, 1<<63, 1<<31, nil))
	f.Add(encodeRequest(cmdFlagNoHole, cmdWriteZeroes, 3, 4000, 200, nil))
	f.Add(make([]byte, 28))
	f.Fuzz(func(t *testing.T, h []byte) {
		q, err := readRequestHeader(bytes.NewReader(h))
		if err != nil {
			return
		}
		if got := encodeRequest(q.flags, q.cmd, q.cookie, q.offset, q.length, nil); !bytes.Equal(got, h[:28]) {
			t.Fatalf("%x parsed to %+v, which encodes as %x", h[:28], q, got)
		}
		const size = 4096
		if q.check(size, false) == 0 && q.cmd != cmdFlush && q.offset+uint64(q.length) > size {
			t.Fatalf("request %+v past the end of a %d-byte export accepted", q, size)
		}
	})
}

// fuzzConn is a connection whose client sends fixed bytes and discards
// every reply.
type fuzzConn struct {
	io.Reader
}

func (fuzzConn) Write(p []byte) (int, error)      { return len(p), nil }
func (fuzzConn) Close() error                     { return nil }
func (fuzzConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (fuzzConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (fuzzConn) SetDeadline(time.Time) error      { return nil }
func (fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzSession feeds arbitrary client bytes through a whole session: the
// server must end it (the input runs out) without panicking, and never
// write outside the export.
func FuzzSession(f *testing.F) {
	hello := binary.BigEndian.AppendUint32(nil, flagCFixedNewstyle)
	opt := func(code uint32, data []byte) []byte {
		b := binary.BigEndian.AppendUint64(nil, magicOpt)
		b = binary.BigEndian.AppendUint32(b, code)
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		return append(b, data...)
	}
	goDisk := append(append([]byte(nil), hello...), opt(optGo, infoData("disk", infoBlockSize))...)
	f.Add(append(append([]byte(nil), hello...), opt(optList, nil)...))
	f.Add(append(append([]byte(nil), goDisk...), encodeRequest(0, cmdWrite, 1, 10, 4, []byte("abcd"))...))
	f.Add(append(append([]byte(nil), goDisk...), encodeRequest(0, cmdRead, 1, 0, 4096, nil)...))
	f.Add(append(append([]byte(nil), goDisk...), encodeRequest(0, cmdTrim, 1, 0, 100, nil)...))
	f.Add(append(append([]byte(nil), hello...), opt(optExportName, []byte("disk"))...))
	f.Fuzz(func(t *testing.T, in []byte) {
		mem := newMem(4096)
		s := &Server{Exports: []Export{{Name: "disk", Size: 4096, Backend: mem}}, MaxPayload: 8192}
		done := make(chan struct{})
		go func() {
			_ = s.ServeConn(context.Background(), fuzzConn{bytes.NewReader(in)})
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(safetyStop):
			t.Fatal("the session did not end when its input did")
		}
		if len(mem.data) != 4096 {
			t.Fatalf("the export grew to %d bytes", len(mem.data))
		}
	})
}
