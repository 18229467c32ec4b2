// Package paxostest holds test helpers the baselines
// (baselines/shardedpaxos, baselines/rspaxos) share.
package paxostest

import (
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Ctx is a node.Context that records a handler's effects.
type Ctx struct {
	Addr   node.Addr // what Self returns
	Sent   []Sent
	Timers []node.Timer
}

// Sent is one message a handler sent.
type Sent struct {
	To node.Addr
	M  node.Message
}

// Self implements node.Context.
func (c *Ctx) Self() node.Addr { return c.Addr }

// Send implements node.Context.
func (c *Ctx) Send(to node.Addr, m node.Message) { c.Sent = append(c.Sent, Sent{to, m}) }

// Stream implements node.Context; it records m like Send.
func (c *Ctx) Stream(to node.Addr, m node.Message) { c.Sent = append(c.Sent, Sent{to, m}) }

// SetTimer implements node.Context.
func (c *Ctx) SetTimer(t node.Timer, _, _ time.Duration) { c.Timers = append(c.Timers, t) }

// Take returns and forgets the messages sent so far.
func (c *Ctx) Take() []Sent {
	s := c.Sent
	c.Sent = nil
	return s
}

// GroupsOf lists, in order, the groups (shards) the scripts touch.
func GroupsOf(l erasure.Layout, scripts [][][]msg.Op) []int {
	var gs []int
	for _, sc := range scripts {
		for _, txn := range sc {
			for _, op := range txn {
				if g := l.Shard(op.Block); !slices.Contains(gs, g) {
					gs = append(gs, g)
				}
			}
		}
	}
	slices.Sort(gs)
	return gs
}
