package check

import (
	"fmt"
	"github.com/amalgam-store/amalgam/mc"
	"strings"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
)

// Crash scenarios: a server stops for good at a moment the search chooses
// (there is no replacement in them: reconfiguration is not involved). A
// crashed server's state still counts for the 3.4.1 invariant (it is on
// disk), its streams end, and messages to it are lost. Besides the safety
// invariants, each scenario says which clients must still finish: once
// nothing is in flight, those clients have all their replies (timers never
// fire in these scenarios, so a quiet state is a final one).

// DoneWhenQuiet holds when some message is in flight, or when each of
// the clients has all its replies: a quiet state is final when timers
// cannot fire, so this says the clients finish on every path.
func DoneWhenQuiet(clients ...node.Addr) mc.Predicate {
	names := make([]string, len(clients))
	for i, c := range clients {
		names[i] = string(c)
	}
	return mc.Pred("quiet states have "+strings.Join(names, ", ")+" done", func(s *mc.State) (bool, string) {
		if !s.Quiet() {
			return true, "messages in flight"
		}
		for _, a := range clients {
			c, ok := s.Node(a).(*workload.Client)
			if ok && !c.Done() {
				return false, fmt.Sprintf("nothing is in flight but %s has %d of %d replies", a, len(c.Replies()), len(c.Script()))
			}
		}
		return true, "the clients are done"
	})
}

// WitnessLayout is g=3, f=2 with one witness: stripe 0 has data on
// machines 0-2, parity on 3 and 4, and the witness on 5. A commit needs
// f=2 acknowledgements among the three backups.
var WitnessLayout = erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 1, BlockSize: 8}

var (
	// CrashParityWitness crashes one of the two parity servers while a
	// client writes and reads: the other parity server and the witness
	// still make the f=2 quorum, so both operations commit.
	CrashParityWitness = register(&Scenario{
		Name: "crash-parity-witness",
		Doc: "g=3 f=2 w=1, 6 machines, 1 stripe; one client: write b0, read b0; parity/3 or parity/4 crashes at any moment; " +
			"the client must finish (parity + witness make the quorum)",
		Layout:   WitnessLayout,
		Scripts:  [][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}},
		Settings: mc.Settings{MaxCrashes: 1, CrashTargets: []node.Addr{msg.ParityAddr(3), msg.ParityAddr(4)}},
		Extra:    []mc.Predicate{DoneWhenQuiet(msg.ClientAddr(0))},
	})

	// CrashBackupWitness crashes any one backup of the stripe (a parity
	// server or the witness) while two clients on two shards write and
	// read: the two remaining backups make the quorum for both shards.
	CrashBackupWitness = register(&Scenario{
		Name: "crash-backup-witness",
		Doc: "g=3 f=2 w=1, 6 machines, 1 stripe; client 0: write b0, read b0; client 1: add b1; parity/3, parity/4 or " +
			"witness/5 crashes at any moment; both clients must finish",
		Layout: WitnessLayout,
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {read(0)}},
			{{add(1, 2)}},
		},
		Settings: mc.Settings{MaxCrashes: 1, CrashTargets: []node.Addr{msg.ParityAddr(3), msg.ParityAddr(4), msg.WitnessAddr(5)}},
		Extra:    []mc.Predicate{DoneWhenQuiet(msg.ClientAddr(0), msg.ClientAddr(1))},
	})

	// CrashParityNoWitness is the same crash with f=2 and no witness:
	// the quorum needs both parity servers, so an operation whose PREPARE
	// a crashed parity server never acknowledged cannot commit until the
	// server is replaced. Only safety is checked; TestCrashScenarios shows
	// that the client can be left waiting.
	CrashParityNoWitness = register(&Scenario{
		Name: "crash-parity",
		Doc: "g=3 f=2 w=0, 5 machines, 1 stripe; one client: write b0, read b0; parity/3 or parity/4 crashes at any moment; " +
			"safety only (without a witness the client may wait for a replacement)",
		Layout:   Normal.Layout,
		Scripts:  Normal.Scripts,
		Settings: mc.Settings{MaxCrashes: 1, CrashTargets: []node.Addr{msg.ParityAddr(3), msg.ParityAddr(4)}},
	})

	// CrashData crashes the data server of shard 0 at any moment while
	// client 0 writes and reads a block of it and client 1 adds to a block
	// of shard 1 in the same stripe: the crash may come between PREPARE
	// and COMMIT, leaving PREPAREs at the parity servers that are never
	// committed or dropped, but client 1's operations, whose deltas meet
	// those at the same parity servers, must still commit.
	CrashData = register(&Scenario{
		Name: "crash-data",
		Doc: "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0, read b0; client 1: add b1, read b1; data/0 crashes " +
			"at any moment; client 1 must finish",
		Layout: Normal.Layout,
		Scripts: [][][]msg.Op{
			{{write(0, 1, 8)}, {read(0)}},
			{{add(1, 2)}, {read(1)}},
		},
		Settings: mc.Settings{MaxCrashes: 1, CrashTargets: []node.Addr{msg.DataAddr(0)}},
		Extra:    []mc.Predicate{DoneWhenQuiet(msg.ClientAddr(1))},
	})

	// CrashDataTxn crashes the data server during a transaction over two
	// stripes: the crash may come after one stripe's PREPAREs were
	// acknowledged and before the other's, and the operation must not be
	// committed on one stripe alone.
	CrashDataTxn = register(&Scenario{
		Name:     "crash-data-txn",
		Doc:      "txn (g=2 f=1 w=0, 3 machines, 2 stripes; txn{write b0, add b4} then read b4) with data/0 crashing at any moment",
		Layout:   Txn.Layout,
		Scripts:  Txn.Scripts,
		Settings: mc.Settings{MaxCrashes: 1, CrashTargets: []node.Addr{msg.DataAddr(0)}},
	})
)
