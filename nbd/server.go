package nbd

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
)

// Backend stores an export's bytes. Every method may be called
// concurrently; the server never issues overlapping writes of one request
// out of order, but a client may send overlapping requests at once, and
// then (as NBD allows) either may land last.
type Backend interface {
	// ReadAt fills p from byte off.
	ReadAt(ctx context.Context, p []byte, off int64) error
	// WriteAt writes p at byte off. With fua set it returns only once the
	// bytes are on non-volatile storage.
	WriteAt(ctx context.Context, p []byte, off int64, fua bool) error
	// Zero writes length zero bytes at off (NBD_CMD_TRIM and
	// NBD_CMD_WRITE_ZEROES), honouring fua as WriteAt does.
	Zero(ctx context.Context, off, length int64, fua bool) error
	// Flush returns once every write that returned before it was called
	// is on non-volatile storage.
	Flush(ctx context.Context) error
}

// Export is one named device.
type Export struct {
	Name        string
	Description string
	Size        uint64
	ReadOnly    bool
	// PreferredBlockSize is advertised to clients that ask (a power of
	// two, at least 512; 0 advertises 4096).
	PreferredBlockSize uint32
	Backend            Backend
}

// Server serves exports to NBD clients.
type Server struct {
	Exports []Export
	// MaxInFlight bounds the requests of one connection served at once
	// (default 64); MaxPayload bounds a read or write (default 32 MiB).
	MaxInFlight int
	MaxPayload  uint32
	Log         *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func (s *Server) maxPayload() uint32 {
	if s.MaxPayload == 0 {
		return 32 << 20
	}
	return s.MaxPayload
}

func (s *Server) maxInFlight() int {
	if s.MaxInFlight <= 0 {
		return 64
	}
	return s.MaxInFlight
}

func (s *Server) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Serve accepts connections on ln until Close, serving each in its own
// goroutine.
func (s *Server) Serve(ln net.Listener) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return err
		}
		if !s.track(conn) {
			_ = conn.Close()
			return nil
		}
		go func() {
			defer s.untrack(conn)
			if err := s.ServeConn(context.Background(), conn); err != nil {
				s.log().Info("nbd connection ended", "remote", conn.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Close closes every connection (a hard disconnect; requests in flight
// finish first) and waits for their goroutines. Close the listener
// first.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		// Stop reading requests; the session answers those in flight
		// and ends.
		if cr, ok := c.(interface{ CloseRead() error }); ok {
			_ = cr.CloseRead()
		} else {
			_ = c.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) lookup(name string) (*Export, bool) {
	for i := range s.Exports {
		if s.Exports[i].Name == name {
			return &s.Exports[i], true
		}
	}
	if name == "" && len(s.Exports) == 1 {
		return &s.Exports[0], true // the default export
	}
	return nil, false
}

// ServeConn runs one session on conn: the handshake, then the requests
// of the export the client chose. It closes conn.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) error {
	defer conn.Close()
	ex, err := s.handshake(conn)
	if err != nil || ex == nil {
		return err
	}
	return s.transmit(ctx, conn, ex)
}

// handshake negotiates an export; a nil export with a nil error means the
// client aborted.
func (s *Server) handshake(conn io.ReadWriter) (*Export, error) {
	var hello [18]byte
	binary.BigEndian.PutUint64(hello[0:], magicNBD)
	binary.BigEndian.PutUint64(hello[8:], magicOpt)
	binary.BigEndian.PutUint16(hello[16:], flagFixedNewstyle|flagNoZeroes)
	if _, err := conn.Write(hello[:]); err != nil {
		return nil, err
	}
	var cf [4]byte
	if _, err := io.ReadFull(conn, cf[:]); err != nil {
		return nil, err
	}
	flags := binary.BigEndian.Uint32(cf[:])
	if flags&^(flagCFixedNewstyle|flagCNoZeroes) != 0 {
		return nil, fmt.Errorf("%w: unknown client flags %#x", errProtocol, flags)
	}
	noZeroes := flags&flagCNoZeroes != 0
	for {
		o, err := readOption(conn)
		if err != nil {
			return nil, err
		}
		send := func(typ uint32, data []byte) error {
			_, err := conn.Write(optReply(o.code, typ, data))
			return err
		}
		if o.data == nil && o.size > 0 {
			if err := send(repErrTooBig, []byte("option data too long")); err != nil {
				return nil, err
			}
			continue
		}
		switch o.code {
		case optExportName:
			ex, ok := s.lookup(string(o.data))
			if !ok {
				return nil, fmt.Errorf("%w: unknown export %q", errProtocol, o.data)
			}
			b := make([]byte, 10, 134)
			binary.BigEndian.PutUint64(b, ex.Size)
			binary.BigEndian.PutUint16(b[8:], ex.transmissionFlags())
			if !noZeroes {
				b = b[:134]
			}
			_, err := conn.Write(b)
			return ex, err
		case optAbort:
			_ = send(repAck, nil)
			return nil, nil
		case optList:
			if len(o.data) != 0 {
				err = send(repErrInvalid, []byte("NBD_OPT_LIST takes no data"))
				break
			}
			for i := range s.Exports {
				name := s.Exports[i].Name
				d := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
				d = append(append(d, name...), s.Exports[i].Description...)
				if err = send(repServer, d); err != nil {
					return nil, err
				}
			}
			err = send(repAck, nil)
		case optInfo, optGo:
			req, perr := parseInfoRequest(o.data)
			if perr != nil {
				err = send(repErrInvalid, []byte(perr.Error()))
				break
			}
			ex, ok := s.lookup(req.name)
			if !ok {
				err = send(repErrUnknown, []byte("no export named "+req.name))
				break
			}
			if err = s.sendInfo(send, ex, req); err != nil {
				return nil, err
			}
			if err = send(repAck, nil); err == nil && o.code == optGo {
				return ex, nil
			}
		case optStartTLS:
			err = send(repErrPolicy, []byte("TLS is not offered"))
		default: // including NBD_OPT_STRUCTURED_REPLY: simple replies only
			err = send(repErrUnsup, nil)
		}
		if err != nil {
			return nil, err
		}
	}
}

func (s *Server) sendInfo(send func(uint32, []byte) error, ex *Export, req infoRequest) error {
	d := binary.BigEndian.AppendUint16(nil, infoExport)
	d = binary.BigEndian.AppendUint64(d, ex.Size)
	d = binary.BigEndian.AppendUint16(d, ex.transmissionFlags())
	if err := send(repInfo, d); err != nil {
		return err
	}
	for _, info := range req.infos {
		var d []byte
		switch info {
		case infoName:
			d = append(binary.BigEndian.AppendUint16(nil, infoName), ex.Name...)
		case infoDescription:
			d = append(binary.BigEndian.AppendUint16(nil, infoDescription), ex.Description...)
		case infoBlockSize:
			pref := ex.PreferredBlockSize
			if pref == 0 {
				pref = 4096
			}
			d = binary.BigEndian.AppendUint16(nil, infoBlockSize)
			d = binary.BigEndian.AppendUint32(d, 1)
			d = binary.BigEndian.AppendUint32(d, pref)
			d = binary.BigEndian.AppendUint32(d, max(s.maxPayload(), pref))
		default:
			continue
		}
		if err := send(repInfo, d); err != nil {
			return err
		}
	}
	return nil
}

func (ex *Export) transmissionFlags() uint16 {
	f := uint16(tflagHasFlags | tflagSendFlush | tflagSendFUA | tflagSendTrim | tflagWriteZeroes | tflagCanMultiConn)
	if ex.ReadOnly {
		f |= tflagReadOnly
	}
	return f
}
