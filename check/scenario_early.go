package check

import (
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// earlyMarked selects the messages whose handler's unordered messages a
// host releases before the batch is durable: the kinds that implement
// node.EarlySends, as the runtime does (runtime/lazysync.go).
func earlyMarked(_ node.Addr, m node.Message) bool {
	_, ok := m.(node.EarlySends)
	return ok
}

// early is restart scenario base where the restarting server's crash may
// also come right after it handled up to 4 node.EarlySends messages (one
// batch of the host), with their handlers' unordered messages (a data
// server's replies) sent and nothing else: restarted, it handles the
// messages again (mc.State.SendsBeforeDurableOn).
func early(name, doc string, base *Scenario) *Scenario {
	sc := *base
	sc.Name, sc.Doc, sc.EarlySends = name, doc, earlyMarked
	return register(&sc)
}

// The early variants of the data server's restart scenarios: the crash
// may come after the client has the reply to an operation whose commit is
// lost, so the client's next operation (a read, an add, another client's
// write, or the retry) meets the restarted server that has the operation
// pending again.
var (
	RestartDataEarly = early("restart-data-early", RestartData.Doc+"; or right after a PREPARE-OK's handler, "+
		"with the reply sent before the commit is durable", RestartData)
	RestartDataRetryEarly = early("restart-data-retry-early", RestartDataRetry.Doc+"; or right after a "+
		"PREPARE-OK's handler, with the reply sent before the commit is durable", RestartDataRetry)
	RestartDataTwoEarly = early("restart-data-two-early", RestartDataTwo.Doc+"; or right after a PREPARE-OK's "+
		"handler, with the reply sent before the commit is durable", RestartDataTwo)
	RestartReplaceDataEarly = early("restart-replace-data-early", RestartReplaceData.Doc+"; or right after a "+
		"PREPARE-OK's handler, with the reply sent before the commit is durable", RestartReplaceData)
)

// RestartDataReplaceParityEarly is replace-parity with data/0 crashing at
// any moment, also right after PREPARE-OK handlers whose unordered
// messages left: its replies and the stripe snapshot answers that the
// commit released (the snapshot that rebuilds the replaced parity server).
var RestartDataReplaceParityEarly = register(&Scenario{Name: "restart-data-replace-parity-early",
	Doc: ReplaceParity.Doc + "; data/0 crashes at any moment and restarts from what it persisted, or right after " +
		"a PREPARE-OK's handler, with its replies and snapshot answers sent before the commit is durable",
	Layout: ReplaceParity.Layout, Scripts: ReplaceParity.Scripts, Replace: ReplaceParity.Replace, RebuildRun: ReplaceParity.RebuildRun,
	Settings:   mc.Settings{MaxTimerFires: ReplaceParity.Settings.MaxTimerFires, MaxCrashes: 1, MaxRestarts: 1, CrashTargets: []node.Addr{msg.DataAddr(0)}},
	EarlySends: earlyMarked})

// RestartDataTxnEarly is txn (a transaction across two stripes, then a
// read) with data/0 crashing at any moment and restarting, also right
// after PREPARE-OK handlers whose replies left: the transaction's reply
// may leave once both stripes have their quorum, and the restarted server
// must commit it on both again.
var RestartDataTxnEarly = register(&Scenario{Name: "restart-data-txn-early",
	Doc: "txn (g=2 f=1 w=0, 3 machines, 2 stripes; txn{write b0, add b4} then read b4) with data/0 crashing at any " +
		"moment and restarting from what it persisted, or right after PREPARE-OK handlers, with the reply sent " +
		"before the commit is durable",
	Layout: Txn.Layout, Scripts: Txn.Scripts,
	Settings:   mc.Settings{MaxCrashes: 1, MaxRestarts: 1, CrashTargets: []node.Addr{msg.DataAddr(0)}},
	EarlySends: earlyMarked})
