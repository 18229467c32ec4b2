package stateright

import (
	"github.com/amalgam-store/amalgam/node"
	"github.com/anishathalye/porcupine"
)

// Client is RegisterActor's client with put_count 1: it puts, then gets.
// It keeps the values its gets returned (Stateright's tester keeps them).
type Client struct {
	ID, Servers int
	Awaiting    int // request id awaited; 0: none
	Ops         int // op_count
	Got         int // the get's value
}

// Init implements node.Node: Put(id, 'A' + id - servers) to server id % servers.
func (c *Client) Init(ctx node.Context) {
	c.Awaiting, c.Ops = c.ID, 1
	ctx.Send(Addr(c.ID%c.Servers), Put{Req: c.ID, Value: 'A' + c.ID - c.Servers})
}

// Timer implements node.Node.
func (c *Client) Timer(node.Context, node.Timer) {}

// Handle implements node.Node.
func (c *Client) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	switch m := m.(type) {
	case PutOk:
		if c.Awaiting != 0 && m.Req == c.Awaiting {
			req := (c.Ops + 1) * c.ID
			ctx.Send(Addr((c.ID+c.Ops)%c.Servers), Get{Req: req})
			c.Awaiting, c.Ops = req, c.Ops+1
		}
	case GetOk:
		if c.Awaiting != 0 && m.Req == c.Awaiting {
			c.Awaiting, c.Ops, c.Got = 0, c.Ops+1, m.Value
		}
	}
}

// Clone implements node.Node.
func (c *Client) Clone() node.Node { d := *c; return &d }

// Hash implements node.Node.
func (c *Client) Hash() uint64 {
	h := node.NewHasher()
	h.Int(c.ID)
	h.Int(c.Awaiting)
	h.Int(c.Ops)
	h.Int(c.Got)
	return h.Sum()
}

// Returned implements mc.Client.
func (c *Client) Returned() int { return c.Ops - 1 }

// Operation implements mc.Client: the put (input its Put message), then
// the get (input its Get, output the value).
func (c *Client) Operation(i int) (input, output any, ok bool) {
	switch i {
	case 0:
		in := Put{Req: c.ID, Value: 'A' + c.ID - c.Servers}
		if c.Returned() > 0 {
			return in, PutOk{Req: c.ID}, true
		}
		return in, nil, true
	case 1:
		in := Get{Req: 2 * c.ID}
		if c.Returned() > 1 {
			return in, c.Got, true
		}
		return in, nil, true
	}
	return nil, nil, false
}

// register is the sequential register the clients' history must be
// linearizable to: a get returns the last put's value (0 at first).
func register() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return 0 },
		Step: func(state, input, output any) (bool, any) {
			if p, ok := input.(Put); ok {
				return true, p.Value
			}
			return output == nil || output == state, state
		},
	}
}
