package backup

import (
	"slices"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Ahead reports whether m comes from a configuration newer than cfg: a
// data server's stream message from a primary cfg does not know yet, or a
// snapshot marker of a later configuration. Such messages wait (they
// arrived on an ordered stream and must not be lost) until the receiver
// has caught up.
func Ahead(cfg msg.Config, m node.Message) bool {
	newer := func(shard int, primary uint64) bool {
		return shard >= 0 && shard < len(cfg.Data) && primary > cfg.Data[shard]
	}
	switch m := m.(type) {
	case msg.Prepare:
		return newer(m.Shard, m.Primary)
	case msg.Commit:
		return newer(m.Shard, m.Primary)
	case msg.PrepareDrop:
		return newer(m.Shard, m.Primary)
	case msg.SnapshotMarker:
		return m.Num > cfg.Num
	}
	return false
}

// Early holds stream messages that are Ahead of the receiver's
// configuration, in arrival order.
type Early []Envelope

// Envelope is a held message and its sender.
type Envelope struct {
	From node.Addr
	Msg  node.Message
}

// Hold keeps m and asks the reconfiguration service for the next
// configuration.
func (e *Early) Hold(ctx node.Context, num uint64, from node.Addr, m node.Message) {
	*e = append(*e, Envelope{from, m})
	ctx.Send(msg.ReconfigAddr, msg.ConfigOK{Num: num})
}

// Holds reports whether a message from sender is held: its later stream
// messages must wait behind it, to keep the stream's order.
func (e Early) Holds(from node.Addr) bool {
	return slices.ContainsFunc(e, func(x Envelope) bool { return x.From == from })
}

// Take returns the held messages and forgets them.
func (e *Early) Take() []Envelope {
	out := *e
	*e = nil
	return out
}

// Hash adds the held messages to h.
func (e Early) Hash(h *node.Hasher) {
	h.Int(len(e))
	for _, x := range e {
		h.String(string(x.From))
		x.Msg.Hash(h)
	}
}
