package mc

import "testing"

// Seeds 86 and 426 of the rebuild-pause runs once ended with a server
// waiting for a rebuild timer it never set: its "timer pending" flag was
// not hashed, so a handler result cached for the same server without a
// pending timer was reused.
func TestRebuildPauseFlagHashed(t *testing.T) {
	for _, seed := range []int{86, 426} {
		if _, err := pauseSeed(seed).try(); err != nil {
			t.Errorf("%.400s", err)
		}
	}
}
