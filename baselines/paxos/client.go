package paxos

import (
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// ClientScript is what the baselines' closed-loop clients share: the
// script of transactions they run one at a time, the replies so far, the
// member they believe leads each group, and how they reach it: a request
// goes to that member, a Redirect names another, a retry moves on to the
// next full replica. Script and replies are never modified in place, so
// copies share them.
type ClientScript struct {
	id      uint64
	script  [][]msg.Op
	next    int // index of the transaction in flight (done when == len)
	replies []msg.Reply
	leader  []int // the member believed to lead each group
	layout  erasure.Layout
	p       Params
}

// NewClientScript returns client id's script for a deployment of layout
// (a group per shard) with parameters p, trying member 0 of each group
// first.
func NewClientScript(id uint64, script [][]msg.Op, layout erasure.Layout, p Params) ClientScript {
	return ClientScript{id: id, script: script, leader: make([]int, layout.N), layout: layout, p: p}
}

// Layout is the deployment's layout.
func (c *ClientScript) Layout() erasure.Layout { return c.layout }

// Shard is the shard, and so the group, of the first block of ops; false
// when there is none (no ops, or a block past the layout).
func (c *ClientScript) Shard(ops []msg.Op) (int, bool) {
	if len(ops) == 0 || ops[0].Block >= c.layout.NumBlocks() {
		return 0, false
	}
	return c.layout.Shard(ops[0].Block), true
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

// Follow takes a Redirect to member i of group g, one of the group's full
// replicas, and reports whether it is news (the client resends).
func (c *ClientScript) Follow(g, i int) bool {
	if i < 0 || i >= c.p.Full || i == c.leader[g] {
		return false
	}
	c.leader[g] = i
	return true
}

// TryNext gives up on group g's believed leader for the next full replica.
func (c *ClientScript) TryNext(g int) { c.leader[g] = (c.leader[g] + 1) % c.p.Full }

// Send sends m to the member believed to lead group g.
func (c *ClientScript) Send(ctx node.Context, g int, m node.Message) {
	ctx.Send(c.p.Addr(g, c.leader[g]), m)
}

// SetRetry sets the client's retry timer t (Timing.RetryTimeout).
func (c *ClientScript) SetRetry(ctx node.Context, t node.Timer) {
	lo, hi := c.p.Timing.WithDefaults().RetryTimeout()
	ctx.SetTimer(t, lo, hi)
}

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
