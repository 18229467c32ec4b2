package baselines

import (
	"fmt"
	"strings"

	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
)

// DescribeNode summarises a baseline node's state in one line, for
// traces (mc.Scenario.Describe): a replica's role, ballot, applied slots
// and log, or a client's replies.
func DescribeNode(n node.Node) (string, bool) {
	switch x := n.(type) {
	case *shardedpaxos.Replica:
		return describeReplica(x), true
	case *rspaxos.Replica:
		return describeReplica(x), true
	case Scripted:
		var rs []string
		for _, r := range x.Replies() {
			rs = append(rs, workload.DescribeReply(r))
		}
		return fmt.Sprintf("%d/%d replies [%s]", len(x.Replies()), len(x.Script()), strings.Join(rs, "; ")), true
	}
	return "", false
}

// describeReplica is a member's role ("witness, " first for a witness),
// ballot, promise, applied slots and log.
func describeReplica[I comparable](r Replica[I]) string {
	kind := ""
	if !r.Full() {
		kind = "witness, "
	}
	bal, _ := r.Leading()
	var ss []string
	for _, s := range slotsOf(r) {
		var what []string
		if s.Accepted {
			what = append(what, fmt.Sprintf("accepted %v at %v", s.Acc, s.Ballot))
		}
		if s.Chosen {
			what = append(what, fmt.Sprintf("chosen %v", s.Val))
		}
		ss = append(ss, fmt.Sprintf("%d: %s", s.Slot, strings.Join(what, ", ")))
	}
	gcs := ""
	if r.GC() > 0 {
		gcs = fmt.Sprintf(", discarded to %d", r.GC())
	}
	return fmt.Sprintf("%s%s, ballot %v, promised %v, applied %d%s, log [%s]", kind, r.Role(), bal, r.Promised(), r.Applied(), gcs, strings.Join(ss, "; "))
}
