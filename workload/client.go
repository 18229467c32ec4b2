// Package workload is the deterministic closed-loop client that simulations
// and the model checker run against Amalgam, the generator of its scripts,
// and the sequential model used to check that histories are linearizable.
package workload

import (
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Client runs a script of transactions one at a time, re-sending the
// current one on a timer until its reply arrives.
type Client struct {
	id      uint64
	layout  erasure.Layout
	script  [][]msg.Op
	next    int // index of the transaction in flight (or done when == len)
	replies []msg.Reply
}

// retry is the client's only timer.
type retry struct{ Seq uint64 }

// Hash implements node.Timer.
func (t retry) Hash(h *node.Hasher) { h.Tag(node.TagClientRetry); h.Uint64(t.Seq) }

// NewClient returns client id running script. Every transaction's ops must
// be on one shard; the client sends it to that shard's data server.
func NewClient(id uint64, l erasure.Layout, script [][]msg.Op) *Client {
	return &Client{id: id, layout: l, script: script}
}

// Init implements node.Node.
func (c *Client) Init(ctx node.Context) { c.send(ctx) }

func (c *Client) send(ctx node.Context) {
	if c.Done() {
		return
	}
	ops := c.script[c.next]
	seq := uint64(c.next + 1)
	to := 0
	if len(ops) > 0 && ops[0].Block < c.layout.NumBlocks() {
		to = c.layout.Shard(ops[0].Block)
	}
	ctx.Send(msg.DataAddr(to), msg.Request{Client: c.id, Seq: seq, Ops: ops})
	ctx.SetTimer(retry{Seq: seq}, msg.RetryMin, msg.RetryMax)
}

// Handle implements node.Node.
func (c *Client) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	r, ok := m.(msg.Reply)
	if !ok || c.Done() || r.Seq != uint64(c.next+1) {
		return
	}
	c.replies = append(c.replies, r)
	c.next++
	c.send(ctx)
}

// Timer implements node.Node.
func (c *Client) Timer(ctx node.Context, t node.Timer) {
	if r, ok := t.(retry); ok && r.Seq == uint64(c.next+1) {
		c.send(ctx)
	}
}

// Done reports whether every transaction has its reply.
func (c *Client) Done() bool { return c.next >= len(c.script) }

// ID is the client id used in requests.
func (c *Client) ID() uint64 { return c.id }

// Script is the transactions the client runs, in order.
func (c *Client) Script() [][]msg.Op { return c.script }

// Replies holds the reply of each finished transaction, in order.
func (c *Client) Replies() []msg.Reply { return c.replies }

// Clone implements node.Node. Script and replies are never modified in
// place, so the clone shares them.
func (c *Client) Clone() node.Node {
	cp := *c
	cp.replies = c.replies[:len(c.replies):len(c.replies)]
	return &cp
}

// Hash implements node.Node. The script is fixed at construction, so the
// progress through it and the replies identify the state.
func (c *Client) Hash() uint64 {
	h := node.NewHasher()
	h.Uint64(c.id)
	h.Int(c.next)
	for _, r := range c.replies {
		r.Hash(h)
	}
	return h.Sum()
}
