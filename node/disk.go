package node

import (
	"slices"
	"strings"
)

// Disk is a Writer and Reader over a map: what a node persisted, held in
// memory (the checker's restarts, the runtime's snapshots).
type Disk map[string][]byte

// Put implements Writer.
func (d Disk) Put(k string, v []byte) { d[k] = slices.Clone(v) }

// Link implements Linker: values are never changed in place, so dst
// shares src's.
func (d Disk) Link(dst, src string) bool {
	if v, ok := d[src]; ok {
		d[dst] = v
	} else {
		delete(d, dst)
	}
	return true
}

// Delete implements Writer.
func (d Disk) Delete(k string) { delete(d, k) }

// Get implements Reader.
func (d Disk) Get(k string) ([]byte, bool, error) {
	v, ok := d[k]
	return v, ok, nil
}

// Scan implements Reader.
func (d Disk) Scan(prefix string, fn func(k string, v []byte) error) error {
	var keys []string
	for k := range d {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := fn(k, d[k]); err != nil {
			return err
		}
	}
	return nil
}
