package mc

import (
	"runtime/debug"
	"testing"
)

// TestRaiseGC: overlapping searches raise the collector's target once,
// and the last to end puts the previous target back.
func TestRaiseGC(t *testing.T) {
	t.Setenv("GOGC", "")
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	endA := raiseGC()
	endB := raiseGC()
	if got := debug.SetGCPercent(searchGCPercent); got != searchGCPercent {
		t.Fatalf("during searches the target is %d, want %d", got, searchGCPercent)
	}
	endA()
	if got := debug.SetGCPercent(searchGCPercent); got != searchGCPercent {
		t.Fatalf("with one search left the target is %d, want %d", got, searchGCPercent)
	}
	endB()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after the searches the target is %d, want 100", got)
	}
}
