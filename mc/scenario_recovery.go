package mc

import (
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// Recovery scenarios (thesis 3.3.2): the reconfiguration service replaces
// a server while clients run; the replacement rebuilds what it needs with
// the stripe snapshot protocol. The operator's request arrives at a moment
// the search chooses, so replacement meets every stage of the operations
// in flight. The replaced server is alive (a false suspicion) unless the
// scenario crashes it: the fence must hold against it.
var (
	// ReplaceData replaces the data server of block 0 while a client
	// writes and then reads it: the write may be lost only if it never
	// committed, and the read after the replacement needs the rebuilt block.
	ReplaceData = Register(&Scenario{
		Name: "replace-data",
		Doc: "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, read b0; data/0 replaced at any moment; " +
			"up to 4 timer firings per path",
		Layout:   erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 1, BlockSize: 8},
		Scripts:  [][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}},
		Replace:  []msg.Replace{{Role: erasure.RoleData, Machine: 0, Inc: 1}},
		Settings: Settings{MaxTimerFires: 4},
	})

	// ReplaceDataTwoStripes replaces a data server that has operations in
	// flight on two stripes, whose parity servers differ, so the chain may
	// see gaps in op numbers.
	ReplaceDataTwoStripes = Register(&Scenario{
		Name: "replace-data-two-stripes",
		Doc: "g=3 f=2 w=0, 5 machines, 5 stripes; client 0: write b0 (stripe 0), write b4 (stripe 1), " +
			"read both (all on data/0); client 1: same on b4 then b0; data/0 replaced at any moment; up to 4 timer firings per path",
		Layout: erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 5, BlockSize: 8},
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {write(4, 2, 8)}, {read(0), read(4)}},
			{{write(4, 3, 8)}, {write(0, 4, 8)}},
		},
		Replace:  []msg.Replace{{Role: erasure.RoleData, Machine: 0, Inc: 1}},
		Settings: Settings{MaxTimerFires: 4},
	})
)
