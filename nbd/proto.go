// Package nbd serves block devices over the Network Block Device protocol
// (fixed newstyle negotiation, simple replies), as specified in
// NetworkBlockDevice/nbd doc/proto.md. Requests are served concurrently;
// replies may leave in any order.
package nbd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Magic numbers.
const (
	magicNBD        = 0x4e42444d41474943 // "NBDMAGIC"
	magicOpt        = 0x49484156454f5054 // "IHAVEOPT"
	magicOptReply   = 0x3e889045565a9
	magicRequest    = 0x25609513
	magicSimpleRepl = 0x67446698
)

// Handshake flags (server) and client flags.
const (
	flagFixedNewstyle  = 1 << 0
	flagNoZeroes       = 1 << 1
	flagCFixedNewstyle = 1 << 0
	flagCNoZeroes      = 1 << 1
)

// Transmission flags.
const (
	tflagHasFlags     = 1 << 0
	tflagReadOnly     = 1 << 1
	tflagSendFlush    = 1 << 2
	tflagSendFUA      = 1 << 3
	tflagSendTrim     = 1 << 5
	tflagWriteZeroes  = 1 << 6
	tflagCanMultiConn = 1 << 8
)

// Options.
const (
	optExportName      = 1
	optAbort           = 2
	optList            = 3
	optStartTLS        = 5
	optInfo            = 6
	optGo              = 7
	optStructuredReply = 8
)

// Option replies.
const (
	repAck        = 1
	repServer     = 2
	repInfo       = 3
	repErrUnsup   = 1<<31 + 1
	repErrPolicy  = 1<<31 + 2
	repErrInvalid = 1<<31 + 3
	repErrUnknown = 1<<31 + 6
	repErrTooBig  = 1<<31 + 9
)

// Information types.
const (
	infoExport      = 0
	infoName        = 1
	infoDescription = 2
	infoBlockSize   = 3
)

// Commands and command flags.
const (
	cmdRead        = 0
	cmdWrite       = 1
	cmdDisc        = 2
	cmdFlush       = 3
	cmdTrim        = 4
	cmdWriteZeroes = 6

	cmdFlagFUA    = 1 << 0
	cmdFlagNoHole = 1 << 1
)

// Error values.
const (
	errPerm     = 1
	errIO       = 5
	errInval    = 22
	errNoSpc    = 28
	errShutdown = 108
)

// maxOptionLen bounds the data of one option; longer options are skipped
// and refused with NBD_REP_ERR_TOO_BIG.
const maxOptionLen = 64 << 10

// maxStringLen is the longest export name the protocol allows.
const maxStringLen = 4096

// errProtocol marks a peer's violation of the protocol; the server ends
// the session.
var errProtocol = errors.New("nbd protocol violation")

// option is one option request of the handshake.
type option struct {
	code uint32
	data []byte // nil if the option was too long and skipped
	size uint32 // the length the client announced
}

// readOption reads one option; data longer than maxOptionLen is read and
// dropped (the option then has nil data).
func readOption(r io.Reader) (option, error) {
	var h [16]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return option{}, err
	}
	if binary.BigEndian.Uint64(h[0:]) != magicOpt {
		return option{}, fmt.Errorf("%w: bad option magic %#x", errProtocol, binary.BigEndian.Uint64(h[0:]))
	}
	o := option{code: binary.BigEndian.Uint32(h[8:]), size: binary.BigEndian.Uint32(h[12:])}
	if o.size > maxOptionLen {
		_, err := io.CopyN(io.Discard, r, int64(o.size))
		return o, err
	}
	o.data = make([]byte, o.size)
	_, err := io.ReadFull(r, o.data)
	return o, err
}

// infoRequest is the data of NBD_OPT_INFO and NBD_OPT_GO.
type infoRequest struct {
	name  string
	infos []uint16
}

// parseInfoRequest decodes the data of NBD_OPT_INFO or NBD_OPT_GO.
func parseInfoRequest(d []byte) (infoRequest, error) {
	if len(d) < 6 {
		return infoRequest{}, fmt.Errorf("%d bytes of data, want at least 6", len(d))
	}
	n := binary.BigEndian.Uint32(d)
	if n > maxStringLen {
		return infoRequest{}, fmt.Errorf("name of %d bytes; at most %d", n, maxStringLen)
	}
	if uint64(n) > uint64(len(d))-6 {
		return infoRequest{}, fmt.Errorf("name of %d bytes in %d bytes of data", n, len(d))
	}
	req := infoRequest{name: string(d[4 : 4+n])}
	d = d[4+n:]
	k := int(binary.BigEndian.Uint16(d))
	d = d[2:]
	if len(d) != 2*k {
		return infoRequest{}, fmt.Errorf("%d information requests in %d bytes", k, len(d))
	}
	for i := range k {
		req.infos = append(req.infos, binary.BigEndian.Uint16(d[2*i:]))
	}
	return req, nil
}

// request is one transmission request; data holds a write's payload.
type request struct {
	flags  uint16
	cmd    uint16
	cookie uint64
	offset uint64
	length uint32
	data   []byte
}

// readRequestHeader reads a request's 28-byte header.
func readRequestHeader(r io.Reader) (request, error) {
	var h [28]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return request{}, err
	}
	return parseRequestHeader(h[:])
}

func parseRequestHeader(h []byte) (request, error) {
	if m := binary.BigEndian.Uint32(h); m != magicRequest {
		return request{}, fmt.Errorf("%w: bad request magic %#x", errProtocol, m)
	}
	return request{
		flags:  binary.BigEndian.Uint16(h[4:]),
		cmd:    binary.BigEndian.Uint16(h[6:]),
		cookie: binary.BigEndian.Uint64(h[8:]),
		offset: binary.BigEndian.Uint64(h[16:]),
		length: binary.BigEndian.Uint32(h[24:]),
	}, nil
}

// check validates a request against an export of size bytes, returning
// an NBD error value (0: valid).
func (q request) check(size uint64, readOnly bool) uint32 {
	allowed := uint16(cmdFlagFUA)
	if q.cmd == cmdWriteZeroes {
		allowed |= cmdFlagNoHole
	}
	if q.flags&^allowed != 0 {
		return errInval
	}
	switch q.cmd {
	case cmdRead, cmdWrite, cmdTrim, cmdWriteZeroes:
	case cmdFlush:
		return 0
	default:
		return errInval
	}
	if q.cmd != cmdRead && readOnly {
		return errPerm
	}
	if q.offset > size || uint64(q.length) > size-q.offset {
		if q.cmd == cmdWrite || q.cmd == cmdWriteZeroes {
			return errNoSpc
		}
		return errInval
	}
	return 0
}

func optReply(code, typ uint32, data []byte) []byte {
	b := make([]byte, 20+len(data))
	binary.BigEndian.PutUint64(b, magicOptReply)
	binary.BigEndian.PutUint32(b[8:], code)
	binary.BigEndian.PutUint32(b[12:], typ)
	binary.BigEndian.PutUint32(b[16:], uint32(len(data)))
	copy(b[20:], data)
	return b
}

func simpleReply(cookie uint64, errno uint32) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint32(b, magicSimpleRepl)
	binary.BigEndian.PutUint32(b[4:], errno)
	binary.BigEndian.PutUint64(b[8:], cookie)
	return b
}
