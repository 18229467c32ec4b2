package mc

import (
	"fmt"

	"github.com/amalgam-store/amalgam/node"
)

// Restartable makes the system's crashes restartable, in s and every state
// built from it: a Restart event (Settings.MaxRestarts per path) brings a
// crashed node.Persistent node back as the runtime does after a process
// restart. fresh makes the node as its process starts (the runtime's
// constructor, given the crashed node to read its identity from); the
// checker then calls TrackChanges, Restore with what the crashed node
// persisted, and Init, whose effects are the restart's.
//
// What the node persisted is what its Persist writes from scratch (after
// TrackChanges) in the state it crashed in: in the checker one handler is
// one batch, and a batch's state is durable before its messages are
// released, so at any crash everything the node's handlers did is on
// disk, and nothing else. Incremental Persist calls (what changed since
// the last) are not exercised; a lost last batch only as a mutation test
// (PersistBehind).
//
// With a restorer, a crash no longer ends the node's streams: they stall
// (nothing is delivered to the crashed node; what it sent before the
// crash still arrives) and resume on restart, as the runtime's persisted
// streams do. Unordered messages to the crashed node are lost, as before.
// Not for concurrent searches; set it on the initial state.
func (s *State) Restartable(fresh func(a node.Addr, crashed node.Node) node.Persistent) {
	s.sys.restore = fresh
}

// CorruptDisk changes what restarted nodes read back: fn gets the address
// and what the node persisted, and may change it before Restore reads it.
// It is for mutation tests of persistence (a field never written, a record
// lost), in s and every state built from it; set it on the initial state.
func (s *State) CorruptDisk(fn func(a node.Addr, disk map[string][]byte)) { s.sys.corrupt = fn }

// PersistBehind makes a restarted node read what it persisted before its
// last handler ran, while that handler's messages were already sent: as if
// the host released a batch's effects before its writes were durable. It
// is for mutation tests of that rule, in s and every state built from it;
// set it on the initial state.
func (s *State) PersistBehind() {
	s.PersistBehindOn(func(node.Addr, node.Message) bool { return true })
}

// PersistBehindOn is PersistBehind for the handlers fn selects: the node
// at a handling message m (nil for a timer). A restarted node whose last
// handler fn did not select reads everything it persisted: a later synced
// batch makes the earlier ones durable too. It tests the rule one message
// kind at a time (a host that released that kind's effects early).
func (s *State) PersistBehindOn(fn func(a node.Addr, m node.Message) bool) { s.sys.behind = fn }

// SendsBeforeDurableOn adds crashes that model a host releasing a batch's
// unordered messages before the batch is durable, while it holds the
// batch's stream messages and the acknowledgement of what it handled until
// then: for a crash target a and the message m at the head of a stream to
// it that fn selects, the crash may come right after a handled m, with
// that handler's unordered messages sent and nothing else. Its state, its
// streams and m (still at the head of its stream, delivered again after
// the restart) are as before the handler, as the runtime's are when the
// batch is lost. Such a crash may come after up to 4 selected messages
// heading the streams to a (one host batch): one more Crash event per
// order of them (Event.Handled names them, Event.Env the last), counted
// as a crash; set it on the initial state. Unlike
// PersistBehindOn it is not a mutation: it is the rule a host may follow
// for the kinds fn selects.
func (s *State) SendsBeforeDurableOn(fn func(a node.Addr, m node.Message) bool) { s.sys.early = fn }

// diskImage is what a node persisted: key -> value.
type diskImage = node.Disk

// Persisted is what the node at a would find on disk if it crashed in s:
// what its Persist writes from scratch (see Restartable). Nil for a node
// that does not persist.
func (s *State) Persisted(a node.Addr) map[string][]byte {
	i, ok := s.sys.index[a]
	if !ok {
		return nil
	}
	d, ok := s.image(i)
	if !ok {
		return nil
	}
	return d
}

func (s *State) image(i int) (diskImage, bool) {
	nd, h := s.nodes[i].nd, s.nodes[i].h
	if s.sys.behind != nil && s.nodes[i].prev != nil {
		nd, h = s.nodes[i].prev, s.nodes[i].prevH
	}
	if d := s.nodes[i].disk; d != nil { // LagOn: what the last Sync made durable
		nd, h = d.nd, d.h
	}
	c := s.sys.clone(nd, h)
	p, ok := c.(node.Persistent)
	if !ok {
		return nil, false
	}
	d := diskImage{}
	p.TrackChanges()
	p.Persist(d)
	return d, true
}

// restart rebuilds crashed node i from what it persisted and runs its Init.
func (s *State) restart(i int) (ef *effect, err error) {
	a := s.sys.addrs[i]
	defer func() {
		if r := recover(); r != nil {
			ef, err = nil, &HandlerPanic{Node: a, Value: r}
		}
	}()
	d, ok := s.image(i)
	if !ok {
		return nil, fmt.Errorf("mc: restart %s: the node persists nothing", a)
	}
	p := s.sys.restore(a, s.nodes[i].nd)
	if p == nil {
		return nil, fmt.Errorf("mc: restart %s: no restorer for the node", a)
	}
	if s.sys.corrupt != nil {
		s.sys.corrupt(a, d)
	}
	p.TrackChanges()
	if err := p.Restore(d); err != nil {
		return nil, &HandlerPanic{Node: a, Value: fmt.Sprintf("restore: %v", err)}
	}
	ctx := &simContext{sys: s.sys, self: a}
	p.Init(ctx)
	return &effect{inst: &instance{nd: p, h: p.Hash()}, sends: ctx.sends, streams: ctx.streams, timers: ctx.timers}, nil
}
