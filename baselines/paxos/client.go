package paxos

import (
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// ClientScript is what the baselines' closed-loop clients share: the
// script of transactions they run one at a time, the replies so far, and
// the member they believe leads each group. Script and replies are never
// modified in place, so copies share them.
type ClientScript struct {
	id      uint64
	script  [][]msg.Op
	next    int // index of the transaction in flight (done when == len)
	replies []msg.Reply
	leader  []int // the member believed to lead each group
}

// NewClientScript returns client id's script over groups groups, trying
// member 0 of each first.
func NewClientScript(id uint64, script [][]msg.Op, groups int) ClientScript {
	return ClientScript{id: id, script: script, leader: make([]int, groups)}
}

// ID is the client id used in requests.
func (c *ClientScript) ID() uint64 { return c.id }

// Script is the transactions the client runs, in order.
func (c *ClientScript) Script() [][]msg.Op { return c.script }

// Replies holds the reply of each finished transaction, in order.
func (c *ClientScript) Replies() []msg.Reply { return c.replies }

// Done reports whether every transaction has its reply.
func (c *ClientScript) Done() bool { return c.next >= len(c.script) }

// Current is the index of the transaction in flight and its operations.
func (c *ClientScript) Current() (int, []msg.Op) { return c.next, c.script[c.next] }

// Finish records the reply of the transaction in flight and moves on.
func (c *ClientScript) Finish(r msg.Reply) {
	c.replies = append(c.replies, r)
	c.next++
}

// Leaders is the member the client believes leads each group.
func (c *ClientScript) Leaders() []int { return append([]int(nil), c.leader...) }

// Leader is the member the client believes leads group g.
func (c *ClientScript) Leader(g int) int { return c.leader[g] }

// SetLeaderGuess makes the client first try member i of group g (before
// Init; scenarios use it to spread clients over members).
func (c *ClientScript) SetLeaderGuess(g, i int) { c.leader[g] = i }

// Follow takes a Redirect to member i of group g, one of the group's
// first n members, and reports whether it is news (the client resends).
func (c *ClientScript) Follow(g, i, n int) bool {
	if i < 0 || i >= n || i == c.leader[g] {
		return false
	}
	c.leader[g] = i
	return true
}

// TryNext gives up on group g's believed leader for the next of its first
// n members.
func (c *ClientScript) TryNext(g, n int) { c.leader[g] = (c.leader[g] + 1) % n }

// Copy returns a copy for a clone of the client.
func (c *ClientScript) Copy() ClientScript {
	cp := *c
	cp.replies = c.replies[:len(c.replies):len(c.replies)]
	cp.leader = append([]int(nil), c.leader...)
	return cp
}

// HashTo writes the client's progress into h.
func (c *ClientScript) HashTo(h *node.Hasher) {
	h.Uint64(c.id)
	h.Int(c.next)
	for _, r := range c.replies {
		r.Hash(h)
	}
	for _, g := range c.leader {
		h.Int(g)
	}
}
