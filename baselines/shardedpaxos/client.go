package shardedpaxos

import (
	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Client is a deterministic closed-loop client, like workload.Client but
// routed to Paxos leaders: it runs a script of transactions one at a time,
// sending each to the member it believes leads the group of the
// transaction's shard. A member that does not lead answers with a Redirect
// naming the leader it knows of; the client follows it at once. When a
// retry timer fires without a reply the client tries the next full
// replica, so it finds a new leader after a failure.
type Client struct {
	paxos.ClientScript
	first uint64 // the sequence number of script[0]
}

// NewClient returns client id (ids start at 1) running script. Every
// transaction's ops must be on one shard.
func NewClient(id uint64, cfg Config, script [][]msg.Op) *Client {
	return &Client{ClientScript: paxos.NewClientScript(id, script, cfg.Layout, cfg.params()), first: 1}
}

// StartAt numbers the script from seq instead of 1 (before Init): the
// runtime runs one-transaction clients for an outside client whose
// request has that sequence number.
func (c *Client) StartAt(seq uint64) { c.first = seq }

// seq is the sequence number of the transaction in flight.
func (c *Client) seq() uint64 {
	i, _ := c.Current()
	return c.first + uint64(i)
}

// group is the group of ops: the first block's shard (0 if none).
func (c *Client) group(ops []msg.Op) int {
	g, _ := c.Shard(ops)
	return g
}

// Init implements node.Node.
func (c *Client) Init(ctx node.Context) { c.start(ctx) }

// start sends the current transaction and arms its retry timer.
func (c *Client) start(ctx node.Context) {
	if c.Done() {
		return
	}
	c.send(ctx)
	c.SetRetry(ctx, Retry{Seq: c.seq()})
}

func (c *Client) send(ctx node.Context) {
	_, ops := c.Current()
	c.Send(ctx, c.group(ops), msg.Request{Client: c.ID(), Seq: c.seq(), Ops: ops})
}

// Handle implements node.Node.
func (c *Client) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	if c.Done() {
		return
	}
	seq := c.seq()
	switch m := m.(type) {
	case msg.Reply:
		if m.Seq != seq {
			return
		}
		c.Finish(m)
		c.start(ctx)
	case Redirect:
		_, ops := c.Current()
		if g := c.group(ops); m.Seq == seq && m.Group == g && c.Follow(g, m.Leader) {
			c.send(ctx)
		}
	}
}

// Timer implements node.Node.
func (c *Client) Timer(ctx node.Context, t node.Timer) {
	r, ok := t.(Retry)
	if !ok || c.Done() || r.Seq != c.seq() {
		return
	}
	_, ops := c.Current()
	c.TryNext(c.group(ops))
	c.start(ctx)
}

// Clone implements node.Node.
func (c *Client) Clone() node.Node {
	cp := *c
	cp.ClientScript = c.Copy()
	return &cp
}

// Hash implements node.Node.
func (c *Client) Hash() uint64 {
	h := node.NewHasher()
	c.HashTo(h)
	h.Uint64(c.first)
	return h.Sum()
}
