package shardedpaxos

import (
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
	id      uint64
	cfg     Config
	script  [][]msg.Op
	next    int // index of the transaction in flight (done when == len)
	replies []msg.Reply
	leader  []int  // the member believed to lead each group
	first   uint64 // the sequence number of script[0]
}

// retry is the client's only timer.
type retry struct{ Seq uint64 }

// Hash implements node.Timer.
func (t retry) Hash(h *node.Hasher) { h.Uint64(131); h.Uint64(t.Seq) }

// NewClient returns client id (ids start at 1) running script. Every
// transaction's ops must be on one shard.
func NewClient(id uint64, cfg Config, script [][]msg.Op) *Client {
	return &Client{id: id, cfg: cfg, script: script, leader: make([]int, cfg.Groups()), first: 1}
}

// StartAt numbers the script from seq instead of 1 (before Init): the
// runtime runs one-transaction clients for an outside client whose
// request has that sequence number.
func (c *Client) StartAt(seq uint64) { c.first = seq }

// Leaders is the member the client believes leads each group.
func (c *Client) Leaders() []int { return append([]int(nil), c.leader...) }

// seq is the sequence number of the transaction in flight.
func (c *Client) seq() uint64 { return c.first + uint64(c.next) }

// SetLeaderGuess makes the client first try member i of group g (before
// Init; scenarios use it to spread clients over members).
func (c *Client) SetLeaderGuess(g, i int) { c.leader[g] = i }

func (c *Client) group(ops []msg.Op) int {
	l := c.cfg.Layout
	if len(ops) > 0 && ops[0].Block < l.NumBlocks() {
		return l.Shard(ops[0].Block)
	}
	return 0
}

// Init implements node.Node.
func (c *Client) Init(ctx node.Context) { c.start(ctx) }

// start sends the current transaction and arms its retry timer.
func (c *Client) start(ctx node.Context) {
	if c.Done() {
		return
	}
	c.send(ctx)
	lo, hi := c.cfg.Timing.WithDefaults().RetryTimeout()
	ctx.SetTimer(retry{Seq: c.seq()}, lo, hi)
}

func (c *Client) send(ctx node.Context) {
	ops := c.script[c.next]
	g := c.group(ops)
	ctx.Send(c.cfg.Addr(g, c.leader[g]), msg.Request{Client: c.id, Seq: c.seq(), Ops: ops})
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
		c.replies = append(c.replies, m)
		c.next++
		c.start(ctx)
	case Redirect:
		g := c.group(c.script[c.next])
		if m.Seq != seq || m.Group != g || !c.cfg.IsFull(m.Leader) || m.Leader == c.leader[g] {
			return
		}
		c.leader[g] = m.Leader
		c.send(ctx)
	}
}

// Timer implements node.Node.
func (c *Client) Timer(ctx node.Context, t node.Timer) {
	r, ok := t.(retry)
	if !ok || c.Done() || r.Seq != c.seq() {
		return
	}
	g := c.group(c.script[c.next])
	c.leader[g] = (c.leader[g] + 1) % c.cfg.Full()
	c.start(ctx)
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
	cp.leader = append([]int(nil), c.leader...)
	return &cp
}

// Hash implements node.Node.
func (c *Client) Hash() uint64 {
	h := node.NewHasher()
	h.Uint64(c.id)
	h.Uint64(c.first)
	h.Int(c.next)
	for _, r := range c.replies {
		r.Hash(h)
	}
	for _, g := range c.leader {
		h.Int(g)
	}
	return h.Sum()
}
