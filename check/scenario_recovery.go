package check

import (
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// onOneStripe is a recovery scenario on replace-data's layout (g=3 f=2
// w=0, 5 machines, 1 stripe): the clients' scripts, up to timers timer
// firings per path, and the replacements the operator asks for.
func onOneStripe(name, doc string, scripts [][][]msg.Op, timers int, rs ...msg.Replace) *Scenario {
	return register(&Scenario{Name: name, Doc: doc, Layout: ReplaceData.Layout, Scripts: scripts, Replace: rs,
		Settings: mc.Settings{MaxTimerFires: timers}})
}

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
	ReplaceData = register(&Scenario{
		Name: "replace-data",
		Doc: "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, read b0; data/0 replaced at any moment; " +
			"up to 4 timer firings per path",
		Layout:   erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 1, BlockSize: 8},
		Scripts:  [][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}},
		Replace:  []msg.Replace{{Role: erasure.RoleData, Machine: 0, Inc: 1}},
		Settings: mc.Settings{MaxTimerFires: 4},
	})

	// ReplaceDataTwoStripes replaces a data server that has operations in
	// flight on two stripes, whose parity servers differ, so the chain may
	// see gaps in op numbers.
	ReplaceDataTwoStripes = register(&Scenario{
		Name: "replace-data-two-stripes",
		Doc: "g=3 f=2 w=0, 5 machines, 5 stripes; client 0: write b0 (stripe 0), write b4 (stripe 1), " +
			"read both (all on data/0); client 1: same on b4 then b0; data/0 replaced at any moment; up to 4 timer firings per path",
		Layout: erasure.Layout{N: 5, G: 3, F: 2, W: 0, Stripes: 5, BlockSize: 8},
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {write(4, 2, 8)}, {read(0), read(4)}},
			{{write(4, 3, 8)}, {write(0, 4, 8)}},
		},
		Replace:  []msg.Replace{{Role: erasure.RoleData, Machine: 0, Inc: 1}},
		Settings: mc.Settings{MaxTimerFires: 4},
	})
)

// setRebuildRun sets the stripes per snapshot run of every data and
// parity server among nodes.
func setRebuildRun(nodes map[node.Addr]node.Node, k int) {
	for _, n := range nodes {
		if r, ok := n.(interface{ SetRebuildRun(int) }); ok {
			r.SetRebuildRun(k)
		}
	}
}

// MultiStripeSnapshot replaces data/0 in a layout where stripes 0 and 3
// have the same servers, so one snapshot run rebuilds both, while data/1
// writes both of its blocks in them: every server must take one cut
// across the run.
var MultiStripeSnapshot = register(&Scenario{
	Name: "multi-stripe-snapshot",
	Doc: "g=2 f=1 w=0, 3 machines, 4 stripes; data/0 replaced and rebuilds stripes 0 and 3 in one snapshot run " +
		"while client 0 writes b1 (stripe 0) then b7 (stripe 3) and client 1 writes b7; up to 4 timer firings per path",
	Layout:     erasure.Layout{N: 3, G: 2, F: 1, W: 0, Stripes: 4, BlockSize: 8},
	Scripts:    [][][]msg.Op{{{write(1, 1, 8)}, {write(7, 2, 8)}}, {{write(7, 3, 8)}}},
	Replace:    []msg.Replace{{Role: erasure.RoleData, Machine: 0, Inc: 1}},
	Settings:   mc.Settings{MaxTimerFires: 4},
	RebuildRun: 2,
})

var (
	// ReplaceParity replaces a parity server while a client writes: the
	// data server re-sends its pending operations to the new parity
	// server, which rebuilds its block with a stripe snapshot taken while
	// the write may still be in flight.
	ReplaceParity = onOneStripe("replace-parity", "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, add b1; parity/3 replaced at any moment; up to 4 timer firings per path",
		[][][]msg.Op{{{write(0, 1, 8)}, {add(1, 2)}}}, 4, msg.Replace{Role: erasure.RoleParity, Machine: 3, Inc: 1})

	// SnapshotUnderWrites replaces a data server while the two other data
	// servers of its stripe write: the snapshot that rebuilds its block
	// runs concurrently with writes from every other data server.
	SnapshotUnderWrites = onOneStripe("snapshot-under-writes", "g=3 f=2 w=0, 5 machines, 1 stripe; clients 0 and 1 write b1 and b2 twice; data/0 replaced at any moment "+
		"and rebuilt while they write; up to 4 timer firings per path",
		[][][]msg.Op{{{write(1, 1, 8)}, {write(1, 2, 8)}}, {{write(2, 3, 8)}, {write(2, 4, 8)}}}, 4, msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})

	// PreemptParity asks for a parity and a data server replacement at once:
	// the data server replacement pre-empts the parity replacement if that
	// is still stopping, and the parity replacement starts over after it.
	PreemptParity = onOneStripe("preempt-parity", "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, read b0; parity/3 and data/0 replaced, asked together; up to 5 timer firings per path",
		ReplaceData.Scripts, 5, msg.Replace{Role: erasure.RoleParity, Machine: 3, Inc: 1}, msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1})

	// TwoFailures replaces two data servers of one stripe in sequence (f=2).
	TwoFailures = register(&Scenario{
		Name:     "two-failures",
		Doc:      "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, write b1, read b0; data/0 and data/1 crash and are replaced in sequence",
		Layout:   ReplaceData.Layout,
		Scripts:  [][][]msg.Op{{{write(0, 1, 8)}, {write(1, 2, 8)}, {read(0)}}},
		Replace:  []msg.Replace{{Role: erasure.RoleData, Machine: 0, Inc: 1}, msg.Replace{Role: erasure.RoleData, Machine: 1, Inc: 1}},
		Settings: mc.Settings{MaxTimerFires: 5, MaxCrashes: 2, CrashTargets: []node.Addr{"data/0", "data/1"}},
	})

	// RebuilderFails replaces data/0, then replaces its replacement too,
	// possibly while it is still rebuilding (the operator repeats its
	// requests; the second names incarnation 2).
	RebuilderFails = onOneStripe("rebuilder-fails", "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, read b0; data/0 replaced, then its replacement replaced mid-rebuild",
		ReplaceData.Scripts, 6, msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1}, msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 2})

	// HeldAcrossReplacements replaces data/0 and then its replacement,
	// while two clients send requests for its block: they are held at
	// incarnation 2 until it rebuilds the block, dropped if it is replaced
	// first, and held again at incarnation 3, which must serve them from a
	// block rebuilt under its own configuration.
	HeldAcrossReplacements = onOneStripe("held-across-replacements", "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, read b0; client 1: add to b0, read b0; "+
		"data/0 replaced, then its replacement replaced; requests for b0 are held while it is rebuilt; up to 8 timer firings per path",
		[][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}, {{add(0, 3)}, {read(0)}}}, 8, RebuilderFails.Replace...)

	// SuspectDegradedStripe replaces two data servers of the one stripe
	// and, asked together with them, a live parity server of it (a false
	// suspicion). Whatever the order the requests arrive in, the third
	// replacement must wait until one of the first two has rebuilt: with
	// f=2 blocks degraded, replacing a third server would leave g-1 and
	// lose the stripe (SLC, thesis 3.4.2).
	SuspectDegradedStripe = onOneStripe("suspect-degraded-stripe", "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, read b0; data/0, data/1 and parity/3 replaced, asked together: "+
		"the third waits until one of the others rebuilt (SLC); up to 5 timer firings per path",
		ReplaceData.Scripts, 5, msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1}, msg.Replace{Role: erasure.RoleData, Machine: 1, Inc: 1}, msg.Replace{Role: erasure.RoleParity, Machine: 3, Inc: 1})

	// ReplaceWitness replaces the witness and a data server in a layout
	// with witnesses: witnesses count in the replacement quorum and are
	// replaced like parity servers.
	ReplaceWitness = register(&Scenario{
		Name:     "replace-witness",
		Doc:      "g=3 f=2 w=1, 6 machines, 1 stripe; client 0: write b0, read b0; witness/5 and data/0 replaced; up to 5 timer firings per path",
		Layout:   erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 1, BlockSize: 8},
		Scripts:  ReplaceData.Scripts,
		Replace:  []msg.Replace{{Role: erasure.RoleWitness, Machine: 5, Inc: 1}, msg.Replace{Role: erasure.RoleData, Machine: 0, Inc: 1}},
		Settings: mc.Settings{MaxTimerFires: 5},
	})
)
