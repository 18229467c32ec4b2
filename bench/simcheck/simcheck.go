// Package simcheck holds the test oracles the baselines (baselines/shardedpaxos,
// baselines/rspaxos) share when they run in the simulator and the model
// checker of mc/: the clients' history rebuilt from a state, a
// linearizability predicate that accepts pending operations, and the Paxos
// invariant "one value per log slot".
//
// mc's own predicates (mc.Linearizable, mc.ClientsDonePred, mc.Recorder)
// assume Amalgam's *workload.Client; the baselines route requests to Paxos
// leaders with their own clients, which this package handles through the
// Client interface.
package simcheck

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
	"github.com/anishathalye/porcupine"
)

// Client is a closed-loop client node that runs a script of transactions
// and records one reply per transaction, in order.
type Client interface {
	node.Node
	ID() uint64
	Script() [][]msg.Op
	Replies() []msg.Reply
	Done() bool
}

func clients(s *mc.State) []node.Addr {
	var out []node.Addr
	for _, a := range s.Addrs() {
		if _, ok := s.Node(a).(Client); ok {
			out = append(out, a)
		}
	}
	return out
}

// ClientsDone reports whether every client has all its replies.
func ClientsDone(s *mc.State) bool {
	for _, a := range clients(s) {
		if !s.Node(a).(Client).Done() {
			return false
		}
	}
	return true
}

// ClientsDonePred holds when every client has all its replies.
func ClientsDonePred() mc.Predicate {
	return mc.Pred("all clients done", func(s *mc.State) (bool, string) {
		for _, a := range clients(s) {
			c := s.Node(a).(Client)
			if !c.Done() {
				return false, fmt.Sprintf("%s has %d of %d replies", a, len(c.Replies()), len(c.Script()))
			}
		}
		return true, "every client has all its replies"
	})
}

// History rebuilds the clients' history from s, as mc.History does for
// Amalgam: completed operations with call and return times from the
// state's return order (a closed-loop client invokes its next transaction
// when a reply arrives), then each client's current transaction as pending
// (Output nil, Return MaxInt64) unless complete is set.
func History(s *mc.State, complete bool) []porcupine.Operation {
	var hist []porcupine.Operation
	n := map[node.Addr]int{}
	call := map[node.Addr]int64{}
	for i, a := range s.Returns() {
		c := s.Node(a).(Client)
		t := int64(2*i + 2)
		hist = append(hist, porcupine.Operation{ClientId: int(c.ID() - 1), Input: c.Script()[n[a]],
			Call: call[a], Output: c.Replies()[n[a]], Return: t})
		n[a]++
		call[a] = t + 1
	}
	if complete {
		return hist
	}
	for _, a := range clients(s) {
		c := s.Node(a).(Client)
		if n[a] < len(c.Script()) {
			hist = append(hist, porcupine.Operation{ClientId: int(c.ID() - 1), Input: c.Script()[n[a]],
				Call: call[a], Return: math.MaxInt64})
		}
	}
	return hist
}

// Describe renders a history for failure messages.
func Describe(hist []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range hist {
		out := "pending"
		if r, ok := op.Output.(msg.Reply); ok {
			out = workload.DescribeReply(r)
		}
		ret := fmt.Sprint(op.Return)
		if op.Return == math.MaxInt64 {
			ret = "-"
		}
		fmt.Fprintf(&b, "\n  client/%d [%d..%s] %s -> %s", op.ClientId, op.Call, ret,
			workload.DescribeTxn(op.Input.([]msg.Op)), out)
	}
	return b.String()
}

type blockState map[uint64]string

// Model is workload.Model extended with pending operations (Output nil),
// which may take effect with any result, or not at all.
func Model(l erasure.Layout) porcupine.Model {
	base := workload.Model(l)
	zero := string(make([]byte, l.BlockSize))
	return porcupine.Model{
		Partition: base.Partition,
		Init:      func() any { return blockState{} },
		Step: func(state, input, output any) (bool, any) {
			st, ops := state.(blockState), input.([]msg.Op)
			shard := -1
			if len(ops) > 0 && ops[0].Block < l.NumBlocks() {
				shard = l.Shard(ops[0].Block)
			}
			owns := func(b uint64) bool { return b < l.NumBlocks() && l.Shard(b) == shard }
			reply, done := output.(msg.Reply)
			if err := msg.ValidateTxn(ops, l.BlockSize, owns); err != nil {
				return !done || reply.Err != "", st
			}
			if done && reply.Err != "" {
				return false, st
			}
			got, written := msg.Execute(ops, func(b uint64) []byte {
				if v, ok := st[b]; ok {
					return []byte(v)
				}
				return []byte(zero)
			})
			if done && !workload.SameOutcome(got, reply.Outcome) {
				return false, st
			}
			if len(written) == 0 {
				return true, st
			}
			next := make(blockState, len(st)+len(written))
			for k, v := range st {
				next[k] = v
			}
			for b, v := range written {
				if bytes.Equal(v, []byte(zero)) {
					delete(next, b)
				} else {
					next[b] = string(v)
				}
			}
			return true, next
		},
		Equal: func(a, b any) bool {
			x, y := a.(blockState), b.(blockState)
			if len(x) != len(y) {
				return false
			}
			for k, v := range x {
				if y[k] != v {
					return false
				}
			}
			return true
		},
		DescribeOperation: func(input, output any) string {
			out := "pending"
			if r, ok := output.(msg.Reply); ok {
				out = workload.DescribeReply(r)
			}
			return workload.DescribeTxn(input.([]msg.Op)) + " -> " + out
		},
	}
}

// Linearizable checks the clients' results with porcupine, pending
// operations included. Results are cached by the clients' states and the
// return order.
func Linearizable(l erasure.Layout) mc.Predicate {
	model := Model(l)
	var cache sync.Map
	return mc.Pred("results linearizable", func(s *mc.State) (bool, string) {
		h := node.NewHasher()
		for _, a := range clients(s) {
			h.Uint64(s.Node(a).Hash())
		}
		for _, a := range s.Returns() {
			h.String(string(a))
		}
		k := h.Sum()
		if v, ok := cache.Load(k); ok {
			return v.(string) == "", v.(string)
		}
		hist := History(s, false)
		why := ""
		if !porcupine.CheckOperations(model, hist) {
			why = fmt.Sprintf("history of %d operations is not linearizable:%s", len(hist), Describe(hist))
		}
		cache.Store(k, why)
		if why == "" {
			return true, "the clients' history is linearizable"
		}
		return false, why
	})
}

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
