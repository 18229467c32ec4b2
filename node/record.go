package node

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Fields takes a record's fields in a fixed order: a Hasher or an Enc. A
// message that is both hashed and persisted writes its fields once, to
// either.
type Fields interface {
	Uint64(uint64)
	Int(int)
	Bool(bool)
	Bytes([]byte)
	String(string)
}

var (
	_ Fields = (*Hasher)(nil)
	_ Fields = (*Enc)(nil)
)

// Enc builds a record in a fixed binary encoding: fields in the order the
// writer appends them, integers as varints, byte strings with their
// length. A Dec reads them back in the same order. For records written on
// every batch (gob resends its type descriptors with every record).
type Enc struct{ B []byte }

// EncFor returns an empty Enc for a record to be put to w: the buffer w
// lends, if it lends one (a Writer copies values before Put returns, so
// the buffer is free again once the record is put and may be reused for
// the next), else a new one. Encode one record at a time with it.
func EncFor(w Writer) *Enc {
	if l, ok := w.(EncLender); ok {
		e := l.LendEnc()
		e.B = e.B[:0]
		return e
	}
	return &Enc{}
}

// EncLender is a Writer that lends the buffer EncFor returns.
type EncLender interface {
	LendEnc() *Enc
}

// AppendHex appends v in lower-case hex, zero-padded to digits digits (as
// fmt's %0*x): the fixed-width fields of record keys, which sort as the
// numbers do.
func AppendHex(b []byte, v uint64, digits int) []byte {
	const hexDigits = "0123456789abcdef"
	n := 1
	for x := v >> 4; x != 0; x >>= 4 {
		n++
	}
	for ; digits > n; digits-- {
		b = append(b, '0')
	}
	for i := n - 1; i >= 0; i-- {
		b = append(b, hexDigits[(v>>(4*uint(i)))&0xf])
	}
	return b
}

// HexKey is prefix followed by v as AppendHex writes it.
func HexKey(prefix string, v uint64, digits int) string {
	var a [48]byte
	return string(AppendHex(append(a[:0], prefix...), v, digits))
}

// Uint64 appends v.
func (e *Enc) Uint64(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// Int appends v.
func (e *Enc) Int(v int) { e.B = binary.AppendVarint(e.B, int64(v)) }

// Bool appends v.
func (e *Enc) Bool(v bool) {
	if v {
		e.B = append(e.B, 1)
	} else {
		e.B = append(e.B, 0)
	}
}

// Bytes appends b, keeping nil apart from empty.
func (e *Enc) Bytes(b []byte) {
	if b == nil {
		e.B = append(e.B, 0) // the varint 0
		return
	}
	e.Uint64(uint64(len(b)) + 1)
	e.B = append(e.B, b...)
}

// String appends s.
func (e *Enc) String(s string) {
	e.Uint64(uint64(len(s)))
	e.B = append(e.B, s...)
}

// Dec reads a record written with Enc. After the first error every read
// returns zero; Err reports it.
type Dec struct {
	b   []byte
	err error
}

// NewDec reads b.
func NewDec(b []byte) *Dec { return &Dec{b: b} }

var errShort = errors.New("record too short")

func (d *Dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

// Uint64 reads a Uint64.
func (d *Dec) Uint64() uint64 { return varint(d, binary.Uvarint) }

// Int reads an Int.
func (d *Dec) Int() int { return int(varint(d, binary.Varint)) }

func varint[T int64 | uint64](d *Dec, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Bool reads a Bool.
func (d *Dec) Bool() bool {
	if len(d.b) == 0 {
		d.fail(errShort)
		return false
	}
	v := d.b[0]
	d.b = d.b[1:]
	if v > 1 {
		d.fail(fmt.Errorf("bad bool %d", v))
	}
	return v == 1
}

// Len reads a count of items that follow, each at least one byte long.
func (d *Dec) Len() int {
	n := d.Uint64()
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

// Bytes reads a Bytes, copied out of the record.
func (d *Dec) Bytes() []byte {
	n := d.Uint64()
	if n == 0 {
		return nil
	}
	n--
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return nil
	}
	v := append(make([]byte, 0, n), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

// String reads a String.
func (d *Dec) String() string {
	n := d.Uint64()
	if n > uint64(len(d.b)) {
		d.fail(errShort)
		return ""
	}
	v := string(d.b[:n])
	d.b = d.b[n:]
	return v
}

// More reports whether bytes are left to read (a field that newer
// builds append).
func (d *Dec) More() bool { return len(d.b) > 0 }

// Err is the first error, or an error if bytes are left over.
func (d *Dec) Err() error {
	if d.err == nil && len(d.b) > 0 {
		return fmt.Errorf("%d bytes left over", len(d.b))
	}
	return d.err
}
