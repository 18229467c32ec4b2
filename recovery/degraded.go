package recovery

import "errors"

// CountDegraded is the number of blocks a server has not rebuilt, from
// its flags per stripe (nil when none is degraded).
func CountDegraded(degraded []bool) int {
	n := 0
	for _, d := range degraded {
		if d {
			n++
		}
	}
	return n
}

// Flags is a server's degraded flags per stripe as its rc record holds
// them: gob-encoded packed eight to a byte, since the record is rewritten
// whenever a run starts or is rebuilt (a gob bool slice costs a byte and
// an encoder step per stripe).
type Flags []bool

// GobEncode implements gob.GobEncoder: the number of flags (8 bytes, little
// endian), then the flags, eight to a byte.
func (f Flags) GobEncode() ([]byte, error) {
	b := make([]byte, 8+(len(f)+7)/8)
	for i := range 8 {
		b[i] = byte(uint64(len(f)) >> (8 * i))
	}
	for i, x := range f {
		if x {
			b[8+i>>3] |= 1 << (i & 7)
		}
	}
	return b, nil
}

// GobDecode implements gob.GobDecoder.
func (f *Flags) GobDecode(b []byte) error {
	if len(b) < 8 {
		return errors.New("recovery.Flags: short record")
	}
	var n uint64
	for i := range 8 {
		n |= uint64(b[i]) << (8 * i)
	}
	if uint64(len(b)-8) != (n+7)/8 {
		return errors.New("recovery.Flags: length mismatch")
	}
	*f = nil
	if n > 0 {
		*f = make(Flags, n)
	}
	for i := range *f {
		(*f)[i] = b[8+i>>3]&(1<<(i&7)) != 0
	}
	return nil
}

// Either is packed if it holds flags, else old: the flags of an rc record
// written packed (Flags) or by an older build (a plain bool slice).
func Either(packed Flags, old []bool) []bool {
	if len(packed) > 0 {
		return packed
	}
	return old
}
