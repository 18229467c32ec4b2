package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/wire"
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

// TestSuspectedMachine: a machine the reconfiguration leader suspects is
// shown as suspected whether or not its servers answer; one that does not
// answer still counts as down for its shard and its stripes' quorums.
func TestSuspectedMachine(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 10, BlockSize: 64}
	var nodes []statusNodeJSON
	for m := 0; m < l.N; m++ {
		if m == 2 {
			continue // machine 2 does not answer
		}
		for _, r := range []string{"data", "parity"} {
			nodes = append(nodes, statusNodeJSON{Addr: fmt.Sprintf("%s/%d", r, m), Incarnation: 1, ConfigNum: 1})
		}
	}
	ms := []*wire.Machine{}
	for m := 0; m < l.N; m++ {
		ms = append(ms, &wire.Machine{Index: int32(m), Addr: fmt.Sprintf("h%d", m), DataIncarnation: 1, ParityIncarnation: 1})
	}
	vs := machineViews(l, 1, ms, nodes, []int{2, 3})
	if v := vs[2]; v.State != stateSuspected || !v.unreachable() || !strings.Contains(v.Why, "down (did not answer)") ||
		!strings.Contains(v.Why, "has not moved it to a spare") {
		t.Errorf("machine 2, silent and suspected: %+v", v)
	}
	if v := vs[3]; v.State != stateSuspected || v.unreachable() || strings.Contains(v.Why, "down") {
		t.Errorf("machine 3, answering but suspected: %+v", v)
	}
	if vs[0].State != stateUp || vs[4].State != stateUp {
		t.Errorf("machines 0 and 4: %+v, %+v", vs[0], vs[4])
	}
	a := assess(l, vs, 0)
	all := strings.Join(a.Problems, "\n")
	if !strings.Contains(all, "machine 2 (h2) is suspected: down") || !strings.Contains(all, "machine 3 (h3) is suspected") ||
		!strings.Contains(all, "shard 2 (6 blocks") || strings.Contains(all, "shard 3 (") || !strings.Contains(all, "no spare is registered") {
		t.Errorf("assessment with machine 2 down and 2, 3 suspected:\n%s", all)
	}
	// Suspected alone (servers answering) still says no spare replaces it.
	a = assess(l, machineViews(l, 1, ms, append(nodes, statusNodeJSON{Addr: "data/2", Incarnation: 1, ConfigNum: 1},
		statusNodeJSON{Addr: "parity/2", Incarnation: 1, ConfigNum: 1}), []int{3}), 0)
	if all = strings.Join(a.Problems, "\n"); !strings.Contains(all, "machine 3 (h3) is suspected") || !strings.Contains(all, "no spare is registered") || a.CanLose != 2 {
		t.Errorf("machine 3 suspected, all answering: %+v", a)
	}
}
