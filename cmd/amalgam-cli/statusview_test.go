package main

import (
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
)

func machinesDown(n int, down ...int) []statusMachineJSON {
	ms := make([]statusMachineJSON, n)
	for i := range ms {
		ms[i] = statusMachineJSON{Index: i, Addr: "m", State: stateUp}
	}
	for _, d := range down {
		ms[d].State, ms[d].Why = stateDown, "did not answer"
	}
	return ms
}

// TestAssess: what a down machine means depends on witnesses and spares.
func TestAssess(t *testing.T) {
	// w=0: every stripe where machine 2 holds parity loses its quorum.
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 10, BlockSize: 64}
	a := assess(l, machinesDown(5, 2), 0)
	all := strings.Join(a.Problems, "\n")
	if a.CanLose != 1 || a.SpareAvailable || !strings.Contains(all, "shard 2 (6 blocks") ||
		!strings.Contains(all, "4 stripes have no quorum") || !strings.Contains(all, "no spare is registered") {
		t.Errorf("w=0, machine 2 down: %+v", a)
	}
	// w=1: 2 of 3 backups remain, every stripe keeps its quorum.
	l = erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 12, BlockSize: 64}
	a = assess(l, machinesDown(6, 2), 1)
	all = strings.Join(a.Problems, "\n")
	if a.CanLose != 1 || !a.SpareAvailable || strings.Contains(all, "quorum") || !strings.Contains(a.OneMore, "a spare takes") {
		t.Errorf("w=1, machine 2 down, a spare: %+v", a)
	}
	// Two down with f=2: one more failure can leave a stripe short of g.
	a = assess(l, machinesDown(6, 0, 1), 1)
	if a.CanLose != 0 || !strings.Contains(a.OneMore, "fewer than g blocks") {
		t.Errorf("two down: %+v", a)
	}
	if a = assess(l, machinesDown(6), 0); len(a.Problems) != 0 || a.CanLose != 2 {
		t.Errorf("none down: %+v", a)
	}
}
