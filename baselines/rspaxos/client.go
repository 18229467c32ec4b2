package rspaxos

import (
	"bytes"
	"slices"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Client is a deterministic closed-loop client that runs a script of
// Amalgam transactions over RSPaxos's GET and PUT, one transaction at a
// time, as the thesis does for its RMW experiments:
//
//   - a whole-block write of one block is one PUT;
//   - anything else GETs every block the transaction touches, in order,
//     runs the transaction locally with msg.Execute, and PUTs every block
//     it changed, in order.
//
// There is no isolation: another client's PUT can land between this
// client's GET and PUT, so only scripts of whole-block reads and writes
// (and reads of parts of a block) are linearizable under concurrency.
// Requests go to the member believed to lead the block's group, following
// Redirects; after a retry timeout the client tries the next member.
type Client struct {
	paxos.ClientScript

	// Progress of the transaction in flight.
	seq    uint64   // sequence number of the last GET or PUT sent
	gets   []uint64 // blocks to read, in order
	got    [][]byte // their contents, as read so far
	puts   []uint64 // blocks to write, in order
	data   [][]byte // their new contents
	step   int      // GETs done, then PUTs done
	result msg.Outcome
}

// NewClient returns client id (ids start at 1) running script.
func NewClient(id uint64, cfg Config, script [][]msg.Op) *Client {
	return &Client{ClientScript: paxos.NewClientScript(id, script, cfg.Layout, cfg.params())}
}

// StartAt makes the client number its GETs and PUTs from seq (before
// Init), so that one-transaction clients the runtime runs for an outside
// client never reuse the sequence numbers of earlier ones.
func (c *Client) StartAt(seq uint64) { c.seq = seq - 1 }

// Init implements node.Node.
func (c *Client) Init(ctx node.Context) { c.begin(ctx) }

// begin starts the next transaction, finishing those that need no
// request (invalid ones).
func (c *Client) begin(ctx node.Context) {
	l := c.Layout()
	for !c.Done() {
		_, ops := c.Current()
		shard, ok := c.Shard(ops)
		owns := func(b uint64) bool { return ok && b < l.NumBlocks() && l.Shard(b) == shard }
		if err := msg.ValidateTxn(ops, l.BlockSize, owns); err != nil {
			c.finish(msg.Reply{Err: err.Error()})
			continue
		}
		c.gets, c.got, c.puts, c.data, c.step = nil, nil, nil, nil, 0
		if len(ops) == 1 && ops[0].Kind == msg.OpWrite && ops[0].Offset == 0 && len(ops[0].Data) == l.BlockSize {
			c.result = msg.Outcome{Results: []msg.Result{{}}}
			c.puts, c.data = []uint64{ops[0].Block}, [][]byte{ops[0].Data}
		} else {
			for _, op := range ops {
				if !slices.Contains(c.gets, op.Block) {
					c.gets = append(c.gets, op.Block)
				}
			}
		}
		c.send(ctx, true)
		return
	}
}

func (c *Client) finish(r msg.Reply) {
	i, _ := c.Current()
	r.Seq = uint64(i + 1)
	c.Finish(r)
}

// request is the GET or PUT the client is waiting for.
func (c *Client) request() msg.Request {
	if c.step < len(c.gets) {
		return msg.Request{Client: c.ID(), Seq: c.seq, Ops: []msg.Op{{Kind: msg.OpRead, Block: c.gets[c.step]}}}
	}
	i := c.step - len(c.gets)
	return msg.Request{Client: c.ID(), Seq: c.seq, Ops: []msg.Op{{Kind: msg.OpWrite, Block: c.puts[i], Data: c.data[i]}}}
}

func (c *Client) group() int { return c.Layout().Shard(c.request().Ops[0].Block) }

// send sends the current request, a new one (with a new sequence number
// and a retry timer) when fresh is set.
func (c *Client) send(ctx node.Context, fresh bool) {
	if fresh {
		c.seq++
		c.SetRetry(ctx, Retry{Seq: c.seq})
	}
	c.Send(ctx, c.group(), c.request())
}

// Handle implements node.Node.
func (c *Client) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	if c.Done() {
		return
	}
	switch m := m.(type) {
	case msg.Reply:
		if m.Seq != c.seq {
			return
		}
		if m.Err != "" {
			c.finish(msg.Reply{Err: m.Err})
			c.begin(ctx)
			return
		}
		if c.step < len(c.gets) {
			if len(m.Outcome.Results) != 1 || len(m.Outcome.Results[0].Data) != c.Layout().BlockSize {
				return
			}
			c.got = append(c.got[:len(c.got):len(c.got)], m.Outcome.Results[0].Data)
			c.step++
			if c.step == len(c.gets) {
				c.compute()
			}
		} else {
			c.step++
		}
		if c.step == len(c.gets)+len(c.puts) {
			c.finish(msg.Reply{Outcome: c.result})
			c.begin(ctx)
			return
		}
		c.send(ctx, true)
	case Redirect:
		if g := c.group(); m.Seq == c.seq && m.Group == g && c.Follow(g, m.Leader) {
			c.send(ctx, false)
		}
	}
}

// compute runs the transaction on the blocks read and lists the PUTs.
func (c *Client) compute() {
	_, ops := c.Current()
	out, written := msg.Execute(ops, func(b uint64) []byte { return c.got[slices.Index(c.gets, b)] })
	c.result = out
	for _, b := range c.gets {
		if nv, ok := written[b]; ok && !bytes.Equal(nv, c.got[slices.Index(c.gets, b)]) {
			c.puts = append(c.puts, b)
			c.data = append(c.data, nv)
		}
	}
}

// Timer implements node.Node.
func (c *Client) Timer(ctx node.Context, t node.Timer) {
	r, ok := t.(Retry)
	if !ok || c.Done() || r.Seq != c.seq {
		return
	}
	c.TryNext(c.group())
	c.send(ctx, false)
	c.SetRetry(ctx, r)
}

// Clone implements node.Node. Slices are never modified in place once
// shared, except the leaders, which ClientScript.Copy copies.
func (c *Client) Clone() node.Node {
	cp := *c
	cp.ClientScript = c.Copy()
	cp.got = c.got[:len(c.got):len(c.got)]
	cp.puts = c.puts[:len(c.puts):len(c.puts)]
	cp.data = c.data[:len(c.data):len(c.data)]
	return &cp
}

// Hash implements node.Node.
func (c *Client) Hash() uint64 {
	h := node.NewHasher()
	c.HashTo(h)
	h.Uint64(c.seq)
	h.Int(c.step)
	h.Uint64s(c.gets)
	for _, b := range c.got {
		h.Bytes(b)
	}
	h.Int(len(c.puts))
	for i, b := range c.puts {
		h.Uint64(b)
		h.Bytes(c.data[i])
	}
	return h.Sum()
}
