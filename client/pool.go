package client

import (
	"context"
	"errors"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// Pool is a fixed set of clients of one cluster. A Client runs one
// transaction at a time; a Pool of n runs up to n at once, each under its
// own client id (so each keeps its at-most-once guarantee).
type Pool struct {
	all  []*Client
	free chan *Client
}

// DialPool dials n clients of the cluster at entry. With opts.ID set, the
// clients take ids opts.ID, opts.ID+1, ...; otherwise each draws its own.
func DialPool(ctx context.Context, entry string, opts Options, n int) (*Pool, error) {
	if n < 1 {
		return nil, errors.New("a pool needs at least one client")
	}
	p := &Pool{free: make(chan *Client, n)}
	for i := range n {
		o := opts
		if o.ID != 0 {
			o.ID += uint64(i)
		}
		c, err := Dial(ctx, entry, o)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.all = append(p.all, c)
		p.free <- c
	}
	return p, nil
}

// Size is the number of clients, the most transactions run at once.
func (p *Pool) Size() int { return len(p.all) }

// Layout is the cluster's layout as last fetched by any client.
func (p *Pool) Layout() erasure.Layout { return p.all[0].Layout() }

// Close closes every client.
func (p *Pool) Close() {
	for _, c := range p.all {
		c.Close()
	}
}

// Txn runs ops as Client.Txn does, on a client of the pool that is free
// (waiting for one if all are busy).
func (p *Pool) Txn(ctx context.Context, ops []msg.Op) (msg.Outcome, error) {
	var c *Client
	select {
	case c = <-p.free:
	case <-ctx.Done():
		return msg.Outcome{}, ctx.Err()
	}
	defer func() { p.free <- c }()
	return c.Txn(ctx, ops)
}
