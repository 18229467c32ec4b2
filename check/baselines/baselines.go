// Package baselines holds what the model checker of mc/ checks in the
// baselines (baselines/shardedpaxos, baselines/rspaxos): their scenarios, the
// Paxos invariant "one value per log slot", a log-GC invariant and a wire
// oracle for replies. Their clients' histories are checked with the
// engine's mc.Linearizable against Amalgam's sequential model
// (workload.Model): the baselines serve the same block operations.
package baselines

import (
	"fmt"
	"math"
	"strings"

	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
	"github.com/anishathalye/porcupine"
)

// Scripted is a closed-loop client that runs a script of transactions
// and records one reply per transaction, in order: the baselines'
// clients.
type Scripted interface {
	Script() [][]msg.Op
	Replies() []msg.Reply
}

// scripted is a Scripted client as the checker sees it (mc.Client).
type scripted struct{ c Scripted }

func (s scripted) Returned() int { return len(s.c.Replies()) }

func (s scripted) Operation(i int) (input, output any, ok bool) {
	switch {
	case i >= len(s.c.Script()):
		return nil, nil, false
	case i < len(s.c.Replies()):
		return s.c.Script()[i], s.c.Replies()[i], true
	}
	return s.c.Script()[i], nil, true
}

// ClientOf is the checker's view of a client node: an mc.Client, or a
// Scripted one.
func ClientOf(n node.Node) (mc.Client, bool) {
	switch c := n.(type) {
	case mc.Client:
		return c, true
	case Scripted:
		return scripted{c}, true
	}
	return nil, false
}

// NewState is mc.NewState with the baselines' clients counted as clients.
func NewState(nodes map[node.Addr]node.Node) *mc.State { return mc.NewStateClients(nodes, ClientOf) }

// History is the clients' history of s (mc.History), without the pending
// operations if complete is set.
func History(s *mc.State, complete bool) []porcupine.Operation {
	hist := mc.History(s)
	if complete {
		n := 0
		for _, op := range hist {
			if op.Return != math.MaxInt64 {
				hist[n] = op
				n++
			}
		}
		hist = hist[:n]
	}
	return hist
}

// Describe renders a history of block operations for failure messages.
func Describe(hist []porcupine.Operation) string {
	return mc.DescribeHistory(porcupine.Model{DescribeOperation: describeOp}, nil, hist)
}

func describeOp(input, output any) string {
	out := "pending"
	if r, ok := output.(msg.Reply); ok {
		out = workload.DescribeReply(r)
	}
	return workload.DescribeTxn(input.([]msg.Op)) + " -> " + out
}

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

// ClientsDone reports whether every client has all its replies.
func ClientsDone(s *mc.State) bool { return mc.ClientsDone(s) }

// Slot is one log slot as one member of a Paxos group holds it: the value
// its acceptor accepted (at Ballot), and the value its learner knows is
// chosen.
type Slot[B, V comparable] struct {
	Group, Member int
	Slot          uint64
	Accepted      bool
	Ballot        B
	Acc           V
	Chosen        bool
	Val           V
}

// OneValuePerSlot checks the Paxos safety invariant on the slots of every
// member of every group: for each (group, slot), the values members know
// are chosen and the values a quorum of members accepted at one ballot are
// all the same value. It returns an explanation of the first violation,
// or "".
func OneValuePerSlot[B, V comparable](slots []Slot[B, V], quorum int) string {
	type key struct {
		g int
		s uint64
	}
	type vote struct {
		k   key
		bal B
		val V
	}
	type source struct {
		member  int
		vt      *vote
		members []int
	}
	chosen := map[key]V{}
	where := map[key]source{}
	describe := func(src source) string {
		if src.vt != nil {
			return fmt.Sprintf("accepted at ballot %v by members %v", src.vt.bal, src.members)
		}
		return fmt.Sprintf("learned by member %d", src.member)
	}
	note := func(k key, v V, src source) string {
		if old, ok := chosen[k]; ok {
			if old != v {
				return fmt.Sprintf("group %d slot %d: %v is chosen (%s) and so is %v (%s)", k.g, k.s, old, describe(where[k]), v, describe(src))
			}
			return ""
		}
		chosen[k], where[k] = v, src
		return ""
	}
	for _, sl := range slots {
		if sl.Chosen {
			if why := note(key{sl.Group, sl.Slot}, sl.Val, source{member: sl.Member}); why != "" {
				return why
			}
		}
	}
	votes := map[vote][]int{}
	var order []vote
	for _, sl := range slots {
		if sl.Accepted {
			vt := vote{key{sl.Group, sl.Slot}, sl.Ballot, sl.Acc}
			if votes[vt] = append(votes[vt], sl.Member); len(votes[vt]) == quorum {
				order = append(order, vt)
			}
		}
	}
	for i := range order {
		if why := note(order[i].k, order[i].val, source{vt: &order[i], members: votes[order[i]]}); why != "" {
			return why
		}
	}
	return ""
}

// ReplyWatcher is a wire oracle for mc.State.Observe: it fails when two
// replies to one request (client address, sequence number) differ, which
// would mean the request ran twice or a stale result was served.
type ReplyWatcher struct {
	// Skip, if set, exempts replies: those of requests that may run more
	// than once by design (RSPaxos re-executes a retried GET).
	Skip func(msg.Reply) bool
	seen map[replyKey]uint64
	desc map[replyKey]string
	Err  error
}

type replyKey struct {
	to  node.Addr
	seq uint64
}

// NewReplyWatcher returns an empty watcher.
func NewReplyWatcher() *ReplyWatcher {
	return &ReplyWatcher{seen: map[replyKey]uint64{}, desc: map[replyKey]string{}}
}

// Observe is the callback for mc.State.Observe.
func (w *ReplyWatcher) Observe(e mc.Envelope, _ bool) {
	r, ok := e.Msg.(msg.Reply)
	if !ok || w.Err != nil || w.Skip != nil && w.Skip(r) {
		return
	}
	k := replyKey{e.To, r.Seq}
	h := node.HashOf(r)
	if old, ok := w.seen[k]; ok && old != h {
		w.Err = fmt.Errorf("%s request %d has two different replies: %s, then %s from %s",
			e.To, r.Seq, w.desc[k], workload.DescribeReply(r), e.From)
		return
	}
	w.seen[k] = h
	w.desc[k] = workload.DescribeReply(r)
}
