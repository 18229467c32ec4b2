package simcheck

import (
	"fmt"
	"io"
	"strings"

	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
)

// DescribeNode summarises a baseline node's state in one line: a
// replica's role, ballot, applied slots and log, or a client's replies.
// Other nodes get mc.DescribeNode.
func DescribeNode(n node.Node) string {
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
		return kind + describeReplica(x.Role(), b, x.Promised(), x.Applied(), x.GC(), slots)
	case *rspaxos.Replica:
		b, _ := x.Leading()
		var slots []Slot[rspaxos.Ballot, rspaxos.ID]
		for _, v := range x.Slots() {
			slots = append(slots, Slot[rspaxos.Ballot, rspaxos.ID]{Slot: v.Slot,
				Accepted: v.Accepted, Ballot: v.Ballot, Acc: v.Acc, Chosen: v.Chosen, Val: v.Val})
		}
		return describeReplica(x.Role(), b, x.Promised(), x.Applied(), x.GC(), slots)
	case Client:
		var rs []string
		for _, r := range x.Replies() {
			rs = append(rs, workload.DescribeReply(r))
		}
		return fmt.Sprintf("%d/%d replies [%s]", len(x.Replies()), len(x.Script()), strings.Join(rs, "; "))
	}
	return mc.DescribeNode(n)
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

// PrintTrace is mc.PrintTrace with DescribeNode: each event and the state
// of the node that handled it afterwards.
func PrintTrace(w io.Writer, init *mc.State, events []mc.Event) {
	s := init
	for i, e := range events {
		next, err := s.Apply(e)
		fmt.Fprintf(w, "%3d. %v\n", i+1, e)
		if err != nil {
			fmt.Fprintf(w, "     !! %v\n", err)
			return
		}
		if n := next.Node(e.Target()); n != nil && e.Kind != mc.Drop {
			fmt.Fprintf(w, "     %s: %s\n", e.Target(), DescribeNode(n))
		}
		s = next
	}
}
