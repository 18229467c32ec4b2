package mc

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// EventKind says what an event does.
type EventKind int

// The kinds of event.
const (
	Deliver   EventKind = iota + 1 // deliver an unordered message, removing it
	Duplicate                      // deliver an unordered message, leaving a copy in flight
	Drop                           // lose an unordered message
	StreamIn                       // deliver the head of an ordered stream
	Fire                           // fire a node's timer
	Crash                          // crash a node: it stops, its streams end
)

var kindNames = [...]string{"?", "deliver", "duplicate", "drop", "stream", "fire", "crash"}

func (k EventKind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "?"
	}
	return kindNames[k]
}

// ParseEventKind is the inverse of EventKind.String.
func ParseEventKind(s string) (EventKind, error) {
	for i, n := range kindNames {
		if i > 0 && n == s {
			return EventKind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown event kind %q", s)
}

// Event is one step from a state. Env names the message for message
// events; Node and Timer the node and timer for Fire and Crash.
type Event struct {
	Kind  EventKind
	Env   Envelope
	Node  node.Addr
	Timer uint64 // hash of the timer to fire
}

// Target is the node that handles the event (the crashed node for Crash).
func (e Event) Target() node.Addr {
	if e.Kind == Fire || e.Kind == Crash {
		return e.Node
	}
	return e.Env.To
}

func (e Event) String() string {
	switch e.Kind {
	case Fire:
		return fmt.Sprintf("fire %s timer %016x", e.Node, e.Timer)
	case Crash:
		return fmt.Sprintf("crash %s", e.Node)
	}
	return fmt.Sprintf("%s %s -> %s %s", e.Kind, e.Env.From, e.Env.To, describeMsg(e.Env.Msg))
}

func describeMsg(m node.Message) string {
	s := fmt.Sprintf("%T%+v", m, m)
	s = strings.TrimPrefix(s, "msg.")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// Unlimited, as a Settings bound, removes the bound.
const Unlimited = -1

// Settings choose which events are possible, with per-path bounds. A bound
// of 0 forbids the event, Unlimited allows it without bound. Delivering
// messages (unordered and on streams) is always possible.
type Settings struct {
	MaxDrops      int // unordered messages lost
	MaxDuplicates int // unordered messages delivered while a copy stays in flight
	MaxCrashes    int // nodes crashed
	MaxTimerFires int // timers fired (0: timers never fire)
	// CrashTargets are the nodes that may crash; nil means every node
	// except clients ("client/..." addresses).
	CrashTargets []node.Addr
}

func allows(max, used int) bool { return max == Unlimited || used < max }

// Events lists the events enabled in s, in a deterministic order. Copies
// of one message in the network give one event per kind, not one per copy.
func (s *State) Events(set Settings) []Event {
	out := make([]Event, 0, len(s.net)+len(s.streams)+2)
	drop, dup := allows(set.MaxDrops, s.used.Drops), allows(set.MaxDuplicates, s.used.Duplicates)
	for i, e := range s.net {
		if slices.ContainsFunc(s.net[:i], func(x Envelope) bool { return x.hash == e.hash }) {
			continue // another copy of the same message
		}
		out = append(out, Event{Kind: Deliver, Env: e})
		if dup {
			out = append(out, Event{Kind: Duplicate, Env: e})
		}
		if drop {
			out = append(out, Event{Kind: Drop, Env: e})
		}
	}
	for _, q := range s.streams {
		out = append(out, Event{Kind: StreamIn, Env: q.msgs[0]})
	}
	if allows(set.MaxTimerFires, s.used.Fires) {
		for i, ts := range s.timers {
			for j, t := range ts {
				if timerReady(ts, j) && !slices.ContainsFunc(ts[:j], func(u pendingTimer) bool { return u.hash == t.hash }) {
					out = append(out, Event{Kind: Fire, Node: s.sys.addrs[i], Timer: t.hash})
				}
			}
		}
	}
	if allows(set.MaxCrashes, s.used.Crashes) {
		for i, a := range s.sys.addrs {
			if s.crashed[i] {
				continue
			}
			if set.CrashTargets == nil && !strings.HasPrefix(string(a), "client/") ||
				slices.Contains(set.CrashTargets, a) {
				out = append(out, Event{Kind: Crash, Node: a})
			}
		}
	}
	return out
}

// timerReady applies DSLabs' rule: a timer set after another, with a
// minimum no smaller than the other's maximum, fires after it.
func timerReady(ts []pendingTimer, j int) bool {
	for _, u := range ts[:j] {
		if u.Max <= ts[j].Min {
			return false
		}
	}
	return true
}

// Apply returns the state after e. The handling node is cloned; everything
// else is shared with s. It returns an error for an event not enabled in s
// (ignoring Settings bounds, which Events applies) and a *HandlerPanic when
// the node's handler panics; the state returned with a HandlerPanic is the
// state before the handler's effects, with the budget updated.
func (s *State) Apply(e Event) (next *State, err error) {
	n := s.copyState()
	defer func() {
		if next != nil {
			next.fp = next.fingerprint()
		}
	}()
	switch e.Kind {
	case Deliver, Duplicate, Drop:
		i := slices.IndexFunc(s.net, func(x Envelope) bool { return x.hash == e.Env.hash })
		if i < 0 {
			return nil, fmt.Errorf("mc: %v: no such message in flight", e)
		}
		env := s.net[i]
		switch e.Kind {
		case Duplicate:
			n.used.Duplicates++
		case Drop:
			n.used.Drops++
		}
		if e.Kind != Duplicate {
			n.net = slices.Delete(slices.Clone(s.net), i, i+1)
			n.netSum -= mix(env.hash)
		}
		if e.Kind == Drop {
			return n, nil
		}
		return n, n.handle(env.To, env.From, env.Msg, nil)
	case StreamIn:
		qi, ok := s.findStream(link{e.Env.From, e.Env.To})
		if !ok || s.streams[qi].msgs[0].hash != e.Env.hash {
			return nil, fmt.Errorf("mc: %v: not at the head of its stream", e)
		}
		env := s.streams[qi].msgs[0]
		n.streams = slices.Clone(s.streams)
		if rest := s.streams[qi].msgs[1:]; len(rest) > 0 {
			n.streams[qi].msgs = rest
		} else {
			n.streams = slices.Delete(n.streams, qi, qi+1)
		}
		return n, n.handle(env.To, env.From, env.Msg, nil)
	case Fire:
		i, ok := s.sys.index[e.Node]
		if !ok {
			return nil, fmt.Errorf("mc: %v: unknown node", e)
		}
		j := slices.IndexFunc(s.timers[i], func(t pendingTimer) bool { return t.hash == e.Timer })
		if j < 0 || !timerReady(s.timers[i], j) {
			return nil, fmt.Errorf("mc: %v: timer not ready", e)
		}
		t := s.timers[i][j]
		n.used.Fires++
		n.timers = slices.Clone(s.timers)
		n.timers[i] = slices.Delete(slices.Clone(s.timers[i]), j, j+1)
		return n, n.handle(e.Node, "", nil, t.T)
	case Crash:
		i, ok := s.sys.index[e.Node]
		if !ok || s.crashed[i] {
			return nil, fmt.Errorf("mc: %v: not a live node", e)
		}
		n.used.Crashes++
		n.crashed = slices.Clone(s.crashed)
		n.crashed[i] = true
		n.timers = slices.Clone(s.timers)
		n.timers[i] = nil
		n.streams = slices.DeleteFunc(slices.Clone(s.streams), func(q stream) bool {
			return q.link.From == e.Node || q.link.To == e.Node
		})
		// Unordered messages to a crashed node can never be delivered.
		n.net = slices.DeleteFunc(slices.Clone(s.net), func(x Envelope) bool {
			if x.To == e.Node {
				n.netSum -= mix(x.hash)
				return true
			}
			return false
		})
		return n, nil
	}
	return nil, fmt.Errorf("mc: unknown event kind %d", e.Kind)
}

// HandlerPanic reports a node handler that panicked.
type HandlerPanic struct {
	Node  node.Addr
	Value any
}

func (p *HandlerPanic) Error() string { return fmt.Sprintf("node %s panicked: %v", p.Node, p.Value) }

// handle runs one handler of the node at to on a clone, in place in n
// (which must be a fresh copy). A crashed node ignores everything. The new
// node is hashed here, before the state is shared.
func (n *State) handle(to, from node.Addr, m node.Message, t node.Timer) (err error) {
	i, ok := n.sys.index[to]
	if !ok || n.crashed[i] {
		return nil
	}
	old := n.nodes[i]
	lk := &n.sys.cloneLocks[n.nhash[i]%uint64(len(n.sys.cloneLocks))]
	lk.Lock()
	nd := old.Clone()
	lk.Unlock()
	ctx := n.context(to)
	defer func() {
		if r := recover(); r != nil {
			err = &HandlerPanic{Node: to, Value: r}
		}
	}()
	if m != nil {
		nd.Handle(ctx, from, m)
	} else {
		nd.Timer(ctx, t)
	}
	n.nodes = slices.Clone(n.nodes)
	n.nodes[i] = nd
	n.nhash = slices.Clone(n.nhash)
	n.nhash[i] = nd.Hash()
	if c, ok := nd.(replier); ok {
		if k := len(c.Replies()) - len(old.(replier).Replies()); k > 0 {
			ci := uint8(slices.Index(n.sys.clients, i))
			n.returns = slices.Clone(n.returns)
			for ; k > 0; k-- {
				n.returns = append(n.returns, ci)
			}
		}
	}
	ctx.flush()
	return nil
}

// simContext collects a handler's effects and adds them to the state when
// the handler returns.
type simContext struct {
	s       *State
	self    node.Addr
	sends   []Envelope
	streams []Envelope
	timers  []pendingTimer
}

func (s *State) context(a node.Addr) *simContext { return &simContext{s: s, self: a} }

func (c *simContext) Self() node.Addr { return c.self }

func (c *simContext) Send(to node.Addr, m node.Message) {
	c.sends = append(c.sends, newEnvelope(c.self, to, m))
}

func (c *simContext) Stream(to node.Addr, m node.Message) {
	c.streams = append(c.streams, newEnvelope(c.self, to, m))
}

func (c *simContext) SetTimer(t node.Timer, min, max time.Duration) {
	c.timers = append(c.timers, pendingTimer{T: t, Min: min, Max: max, hash: node.HashOf(t)})
}

// flush adds the collected effects to the state, copying what it changes.
// Messages to unknown or crashed nodes are dropped.
func (c *simContext) flush() {
	s := c.s
	live := func(a node.Addr) bool { i, ok := s.sys.index[a]; return ok && !s.crashed[i] }
	if obs := s.sys.observe; obs != nil {
		for _, e := range c.sends {
			obs(e, false)
		}
		for _, e := range c.streams {
			obs(e, true)
		}
	}
	if len(c.sends) > 0 {
		s.net = slices.Clone(s.net)
		for _, e := range c.sends {
			if live(e.To) {
				s.net = append(s.net, e)
				s.netSum += mix(e.hash)
			}
		}
	}
	if len(c.streams) > 0 {
		s.streams = slices.Clone(s.streams)
		for _, e := range c.streams {
			if !live(e.To) {
				continue
			}
			l := link{e.From, e.To}
			qi, ok := s.findStream(l)
			if ok {
				q := s.streams[qi].msgs
				s.streams[qi].msgs = append(q[:len(q):len(q)], e)
			} else {
				s.streams = slices.Insert(s.streams, qi, stream{link: l, msgs: []Envelope{e}})
			}
		}
	}
	if len(c.timers) > 0 {
		i := s.sys.index[c.self]
		s.timers = slices.Clone(s.timers)
		s.timers[i] = append(slices.Clone(s.timers[i]), c.timers...)
	}
}
