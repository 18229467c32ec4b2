package data

import (
	"bytes"
	"encoding/gob"
	"slices"
	"testing"
)

// TestRCReadsOlderFlags: an rc record written by a build that stored the
// degraded flags as a plain bool slice restores them, and a record
// written now (packed) round-trips.
func TestRCReadsOlderFlags(t *testing.T) {
	want := []bool{true, false, true, true, false, false, false, false, true}
	type olderRC struct {
		Inc      uint64
		Degraded []bool
	}
	for name, rec := range map[string]any{"older": olderRC{Inc: 3, Degraded: want}, "packed": dataRC{Inc: 3, Flags: want}} {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(rec); err != nil {
			t.Fatal(err)
		}
		var rc dataRC
		if err := gob.NewDecoder(&buf).Decode(&rc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rc.Inc != 3 || !slices.Equal(rc.degraded(), want) {
			t.Fatalf("%s: restored inc %d flags %v, want 3 %v", name, rc.Inc, rc.degraded(), want)
		}
	}
}
