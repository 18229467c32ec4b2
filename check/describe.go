package check

import (
	"fmt"
	"strings"

	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/witness"
	"github.com/amalgam-store/amalgam/workload"
)

// DescribeNode summarises an Amalgam node's protocol state in one line,
// for traces (mc.Scenario.Describe). It reports false for other nodes.
func DescribeNode(n node.Node) (string, bool) {
	switch x := n.(type) {
	case *data.Server:
		var ops []string
		for _, op := range x.Ops() {
			c := ""
			if op.Committed {
				c = " committed"
			}
			ops = append(ops, fmt.Sprintf("op %d (client %d seq %d, stripes %v, acks %v%s)", op.OpNum, op.Client, op.Seq, op.Stripes, op.Acks, c))
		}
		return fmt.Sprintf("op_num %d, pending [%s]", x.NextOpNum(), strings.Join(ops, "; ")), true
	case *parity.Server:
		return "prepares " + describeHeld(x.Prepares()), true
	case *witness.Server:
		return "prepares " + describeHeld(x.Prepares()), true
	case *workload.Client:
		var rs []string
		for _, r := range x.Replies() {
			rs = append(rs, workload.DescribeReply(r))
		}
		return fmt.Sprintf("%d/%d replies [%s]", len(x.Replies()), len(x.Script()), strings.Join(rs, "; ")), true
	}
	return "", false
}

func describeHeld(hs []backup.Held) string {
	var out []string
	for _, h := range hs {
		a := ""
		if h.Applied {
			a = " applied"
		}
		out = append(out, fmt.Sprintf("shard %d op %d stripe %d%s", h.P.Shard, h.P.OpNum, h.P.Stripe, a))
	}
	return "[" + strings.Join(out, "; ") + "]"
}
