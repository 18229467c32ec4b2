package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// persistMutant, when set (by the persistence mutation tests only),
// changes what every restarted server reads back: a field its Persist
// never wrote, or a record its Restore forgets.
var persistMutant func(a node.Addr, disk map[string][]byte)

// releaseEarly, when set (by the persistence mutation tests only), makes
// a restarted server read what it persisted before its last handler, when
// releaseEarly selected that handler, whose messages were already sent
// (mc.State.PersistBehindOn).
var releaseEarly func(a node.Addr, m node.Message) bool

// restarting is base with server a crashing at any moment and restarting
// from what it persisted (mc.State.Restartable), at most once per path,
// and up to timers timer firings per path.
func restarting(name, doc string, base *Scenario, a node.Addr, timers int) *Scenario {
	return register(&Scenario{Name: name, Doc: doc, Layout: base.Layout, Scripts: base.Scripts, Replace: base.Replace,
		Settings: mc.Settings{MaxTimerFires: timers, MaxCrashes: 1, MaxRestarts: 1, CrashTargets: []node.Addr{a}}})
}

// The restart scenarios. Without timers the clients send each request
// once, so a request lost with the crash is never answered: only safety
// is checked.
var (
	// RestartData restarts the data server of the written block: the
	// crash may come between PREPARE and COMMIT, with the operation's
	// acknowledgements in flight or the reply not yet sent.
	RestartData = restarting("restart-data", "g=3 f=2 w=0, 5 machines, 1 stripe; one client: write b0, read b0; "+
		"data/0 crashes at any moment and restarts from what it persisted", Normal, msg.DataAddr(0), 0)

	// RestartParity restarts a parity server that may hold the PREPARE of
	// an operation not yet committed, or have applied it.
	RestartParity = restarting("restart-parity", "g=3 f=2 w=0, 5 machines, 1 stripe; one client: write b0, read b0; "+
		"parity/3 crashes at any moment and restarts from what it persisted", Normal, msg.ParityAddr(3), 0)

	// RestartWitness restarts the witness, whose held PREPAREs count in
	// the quorum.
	RestartWitness = restarting("restart-witness", "g=3 f=2 w=1, 6 machines, 1 stripe; one client: write b0, read b0; "+
		"witness/5 crashes at any moment and restarts from what it persisted",
		&Scenario{Layout: WitnessLayout, Scripts: [][][]msg.Op{{{write(0, 1, 8)}, {read(0)}}}}, msg.WitnessAddr(5), 0)

	// RestartReplaceData crashes data/0, which the service also replaces
	// at a moment the search chooses: the old incarnation's restart races
	// the new incarnation's start at the same slot (the NewConfig that
	// starts it reaches the slot before or after the restart).
	RestartReplaceData = restarting("restart-replace-data", "replace-data (g=3 f=2 w=0, client 0: write b0, read b0; "+
		"data/0 replaced at any moment) with data/0 crashing and restarting from what it persisted; up to 2 timer "+
		"firings per path", ReplaceData, msg.DataAddr(0), 2)

	// RestartParityReplaceData restarts a parity server of a stripe whose
	// data server is replaced at a moment the search chooses: the restart
	// may fall in the middle of the replacement's stripe snapshot, and the
	// parity server must come back with the PREPAREs, snapshot copy and
	// fences it persisted.
	RestartParityReplaceData = restarting("restart-parity-replace-data", "replace-data (g=3 f=2 w=0, client 0: write "+
		"b0, read b0; data/0 replaced at any moment) with parity/3 crashing and restarting from what it persisted "+
		"(mid-snapshot among others); up to 2 timer firings per path", ReplaceData, msg.ParityAddr(3), 2)

	// RestartParitySnapshot restarts a parity server of a stripe whose
	// data server is rebuilt while the stripe's other data servers write:
	// a restart between two markers of the snapshot finds PREPAREs that
	// came after the first marker, so the snapshot's copy cannot be taken
	// again; the restarted server must abandon the snapshot (its copies
	// are not persisted) and answer the requester's next round.
	RestartParitySnapshot = restarting("restart-parity-snapshot", "snapshot-under-writes (g=3 f=2 w=0, clients 0 and 1 "+
		"write b1 and b2 twice; data/0 replaced at any moment) with parity/3 crashing and restarting from what it "+
		"persisted; up to 2 timer firings per path", SnapshotUnderWrites, msg.ParityAddr(3), 2)

	// RestartWitnessReplaceData restarts the witness of a stripe whose
	// data server is replaced at a moment the search chooses: the witness
	// must come back still fencing the replaced incarnation (its
	// incarnation and fences are durable).
	RestartWitnessReplaceData = restarting("restart-witness-replace-data", "g=3 f=2 w=1, 6 machines, 1 stripe; "+
		"client 0: write b0, read b0; data/0 replaced at any moment; witness/5 crashes and restarts from what it "+
		"persisted; up to 3 timer firings per path",
		&Scenario{Layout: WitnessLayout, Scripts: ReplaceData.Scripts, Replace: ReplaceData.Replace}, msg.WitnessAddr(5), 3)

	// RestartDataTwo restarts the data server between two clients'
	// writes to the same block: after the restart, the second write takes
	// the next op number the restarted server knows, so a server that
	// forgot the first write while its PREPAREs were out numbers two
	// different writes alike. One client retry lets the first write end,
	// so that the stripe becomes quiescent and parity is checked.
	RestartDataTwo = restarting("restart-data-two", "g=3 f=2 w=0, 5 machines, 1 stripe; client 0: write b0; client 1: "+
		"write b0 (other bytes); data/0 crashes at any moment and restarts from what it persisted; 1 timer firing per "+
		"path (a client retry)", &Scenario{
		Layout: Normal.Layout, Scripts: [][][]msg.Op{{{write(0, 1, 8)}}, {{write(0, 2, 8)}}}}, msg.DataAddr(0), 1)

	// RestartDataRetry restarts the data server while the client may retry
	// its request (one timer firing): the retry must find the first
	// execution's result in the restarted server's client table.
	RestartDataRetry = restarting("restart-data-retry", "g=3 f=2 w=0, 5 machines, 1 stripe; one client: add to b0, "+
		"read b0; data/0 crashes at any moment and restarts from what it persisted; 1 timer firing per path (a client "+
		"retry)", &Scenario{Layout: Normal.Layout, Scripts: [][][]msg.Op{{{add(0, 1)}, {read(0)}}}}, msg.DataAddr(0), 1)
)

// PartitionServer cuts data/0 or parity/3 off from every other node for
// 4 events, once per path, at any moment: the streams across the cut
// (PREPAREs, COMMITs, acknowledgements) stall and resume when it heals;
// the client's requests and replies across it are lost, and its retries
// (2 timer firings) may cross after the cut heals.
var PartitionServer = register(&Scenario{
	Name: "partition-server",
	Doc: "g=3 f=2 w=0, 5 machines, 1 stripe; one client: write b0, read b0; data/0 or parity/3 cut off for 4 events " +
		"at any moment; up to 2 timer firings per path",
	Layout:   Normal.Layout,
	Scripts:  Normal.Scripts,
	Settings: mc.Settings{MaxTimerFires: 2, MaxPartitions: 1, CrashTargets: []node.Addr{msg.DataAddr(0), msg.ParityAddr(3)}},
})
