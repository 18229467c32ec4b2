package check

import (
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// ReplaceDataTxn replaces a data server with a transaction over two
// stripes in flight and a later operation on one of them: a stop may
// reach one stripe's parity server before the transaction's PREPARE and
// the other's after the later operation's, so the answers hold the later
// operation and only part of the transaction (a gap in op numbers); the
// second client's read of both blocks sees a half-applied transaction.
var ReplaceDataTxn = register(&Scenario{
	Name: "replace-data-txn",
	Doc: "g=2 f=1 w=0, 3 machines, 2 stripes; client 0: txn{write b0, add b3} (shard 0, stripes 0 and 1); client 1: add b3, " +
		"then read b0 and b3 in one txn; data/0 replaced at any moment; up to 4 timer firings per path",
	Layout:   Txn.Layout,
	Scripts:  [][][]msg.Op{{{write(0, 3, 8), add(txnBlock, 5)}}, {{add(txnBlock, 7)}, {read(0), read(txnBlock)}}},
	Replace:  []msg.Replace{{Role: erasure.RoleData, Machine: 0, Inc: 1}},
	Settings: ReplaceData.Settings,
})
