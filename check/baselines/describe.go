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
		b, _ := x.Leading()
		kind := ""
		if !x.Full() {
			kind = "witness, "
		}
		var slots []Slot[shardedpaxos.Ballot, shardedpaxos.ID]
		for _, v := range x.Slots() {
			slots = append(slots, Slot[shardedpaxos.Ballot, shardedpaxos.ID]{Slot: v.Slot,
				Accepted: v.Accepted, Ballot: v.Ballot, Acc: v.Acc, Chosen: v.Chosen, Val: v.Val})
		}
		return kind + describeReplica(x.Role(), b, x.Promised(), x.Applied(), x.GC(), slots), true
	case *rspaxos.Replica:
		b, _ := x.Leading()
		var slots []Slot[rspaxos.Ballot, rspaxos.ID]
		for _, v := range x.Slots() {
			slots = append(slots, Slot[rspaxos.Ballot, rspaxos.ID]{Slot: v.Slot,
				Accepted: v.Accepted, Ballot: v.Ballot, Acc: v.Acc, Chosen: v.Chosen, Val: v.Val})
		}
		return describeReplica(x.Role(), b, x.Promised(), x.Applied(), x.GC(), slots), true
	case Scripted:
		var rs []string
		for _, r := range x.Replies() {
			rs = append(rs, workload.DescribeReply(r))
		}
		return fmt.Sprintf("%d/%d replies [%s]", len(x.Replies()), len(x.Script()), strings.Join(rs, "; ")), true
	}
	return "", false
}

func describeReplica[B, V comparable](role string, bal, promised B, applied, gc uint64, slots []Slot[B, V]) string {
	var ss []string
	for _, s := range slots {
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
	if gc > 0 {
		gcs = fmt.Sprintf(", discarded to %d", gc)
	}
	return fmt.Sprintf("%s, ballot %v, promised %v, applied %d%s, log [%s]", role, bal, promised, applied, gcs, strings.Join(ss, "; "))
}
