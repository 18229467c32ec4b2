package mc

import (
	"errors"
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
	Crash                          // crash a node: it stops, its streams end (stall, with restarts)
	Restart                        // restart a crashed node from what it persisted
	Partition                      // cut a node's links for at most Settings.PartitionEvents events
	Heal                           // end the cut before its last event
	Sync                           // a node's disk catches up with it (State.LagOn)
)

var kindNames = [...]string{"?", "deliver", "duplicate", "drop", "stream", "fire", "crash", "restart", "partition", "heal", "sync"}

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
// events; Node and Timer the node and timer for Fire, Node the node for
// Crash, Restart and Partition (whose Timer is how many events the cut
// lasts).
type Event struct {
	Kind  EventKind
	Env   Envelope
	Node  node.Addr
	Timer uint64     // hash of the timer to fire
	T     node.Timer // the timer to fire, for descriptions
	// Handled, for a crash of State.SendsBeforeDurableOn, are the stream
	// messages the node handled before it crashed, in order, each the
	// next of its stream; Env is the last.
	Handled []Envelope
}

// OfNode reports whether events of kind k name their node in Event.Node
// rather than carry a message in Env.
func (k EventKind) OfNode() bool {
	return k == Fire || k == Crash || k == Restart || k == Partition || k == Heal || k == Sync
}

// Target is the node that handles the event (the crashed node for Crash,
// the restarted one for Restart).
func (e Event) Target() node.Addr {
	if e.Kind.OfNode() {
		return e.Node
	}
	return e.Env.To
}

func (e Event) String() string {
	switch e.Kind {
	case Fire:
		if e.T == nil {
			return fmt.Sprintf("fire %s timer %016x", e.Node, e.Timer)
		}
		return fmt.Sprintf("fire %s timer %s", e.Node, Describe(e.T))
	case Crash:
		if len(e.Handled) > 0 {
			var b strings.Builder
			for k, h := range e.Handled {
				if k > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s -> %s %s", h.From, h.To, Describe(h.Msg))
			}
			return fmt.Sprintf("crash %s after handling %s, their unordered messages sent before the batch was durable", e.Node, b.String())
		}
		return fmt.Sprintf("crash %s", e.Node)
	case Restart:
		return fmt.Sprintf("restart %s", e.Node)
	case Partition:
		return fmt.Sprintf("partition %s from every other node for at most %d events", e.Node, e.Timer)
	case Heal:
		return fmt.Sprintf("heal the cut of %s", e.Node)
	case Sync:
		return fmt.Sprintf("sync %s: its state is durable, its held messages leave", e.Node)
	}
	return fmt.Sprintf("%s %s -> %s %s", e.Kind, e.Env.From, e.Env.To, Describe(e.Env.Msg))
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
	// MaxRestarts bounds restarts of crashed nodes from what they
	// persisted; only systems with a restorer (State.Restartable) restart.
	MaxRestarts int
	// MaxPartitions bounds link cuts per path: a Partition event cuts
	// every link of one node (a CrashTargets node) until a Heal event, or
	// for at most the next PartitionEvents events (default 4). During a cut,
	// unordered messages across it are lost (those in flight when it
	// starts and those sent during it) and streams across it stall, then
	// resume; one cut at a time.
	MaxPartitions   int
	PartitionEvents int
	// CrashTargets are the nodes that may crash; nil means every node
	// except the clients (see Client).
	CrashTargets []node.Addr
	// SkipNoOps makes a delivery of an unordered message (Deliver or
	// Duplicate) or a timer firing whose handler leaves the node's hash
	// unchanged and sends, streams and sets nothing no step at all: the
	// search makes no state of it, and the message stays in flight (the
	// timer stays pending). Stream deliveries are always steps (a stream's
	// head must be consumed for the rest to arrive). This is Stateright's
	// rule. It is sound only for predicates that a message in flight or a
	// pending timer more cannot turn from false to true (see
	// docs/model-checking.md); off by default.
	SkipNoOps bool
}

func allows(max, used int) bool { return max == Unlimited || used < max }

// Events lists the events enabled in s, in a deterministic order. Copies
// of one message in the network give one event per kind, not one per copy.
func (s *State) Events(set Settings) []Event {
	return s.appendEvents(make([]Event, 0, len(s.net)+len(s.streams)+2), set)
}

// appendEvents appends the events enabled in s to out.
func (s *State) appendEvents(out []Event, set Settings) []Event {
	drop, dup := allows(set.MaxDrops, s.used.Drops), allows(set.MaxDuplicates, s.used.Duplicates) && !s.sys.keep
	for i, e := range s.net {
		if slices.ContainsFunc(s.net[:i], func(x Envelope) bool { return x.hash == e.hash }) {
			continue // another copy of the same message
		}
		if s.across(e) {
			continue // cannot happen: a cut drops such messages
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
		if q.msgs[0].to > 0 && s.crashed[q.msgs[0].to-1] || s.across(q.msgs[0]) {
			continue // stalled until the receiver restarts (State.Restartable) or the cut heals
		}
		out = append(out, Event{Kind: StreamIn, Env: q.msgs[0]})
	}
	if allows(set.MaxTimerFires, s.used.Fires) {
		for i, ts := range s.timers {
			for j, t := range ts {
				if timerReady(ts, j) && !slices.ContainsFunc(ts[:j], func(u pendingTimer) bool { return u.hash == t.hash }) {
					out = append(out, Event{Kind: Fire, Node: s.sys.addrs[i], Timer: t.hash, T: t.T})
				}
			}
		}
	}
	if allows(set.MaxCrashes, s.used.Crashes) {
		for i, a := range s.sys.addrs {
			if s.crashed[i] {
				continue
			}
			if set.CrashTargets == nil && !slices.Contains(s.sys.clients, i) ||
				slices.Contains(set.CrashTargets, a) {
				out = append(out, Event{Kind: Crash, Node: a})
				out = s.appendEarlyCrashes(out, i, a)
			}
		}
	}
	if s.cut != 0 {
		out = append(out, Event{Kind: Heal, Node: s.sys.addrs[s.cut-1]})
	}
	for i, in := range s.nodes {
		if in.disk != nil && !s.crashed[i] {
			out = append(out, Event{Kind: Sync, Node: s.sys.addrs[i]})
		}
	}
	if s.cut == 0 && set.MaxPartitions != 0 && allows(set.MaxPartitions, s.used.Partitions) {
		for i, a := range s.sys.addrs {
			if set.CrashTargets == nil && !slices.Contains(s.sys.clients, i) || slices.Contains(set.CrashTargets, a) {
				out = append(out, Event{Kind: Partition, Node: a, Timer: uint64(cutLength(set))})
			}
		}
	}
	if s.sys.restore != nil && allows(set.MaxRestarts, s.used.Restarts) {
		for i, a := range s.sys.addrs {
			if _, ok := s.nodes[i].nd.(node.Persistent); ok && s.crashed[i] {
				out = append(out, Event{Kind: Restart, Node: a})
			}
		}
	}
	return out
}

// maxEarly bounds the stream messages a crash of SendsBeforeDurableOn
// comes after (a batch of the host handles several).
const maxEarly = 4

// appendEarlyCrashes appends the crashes of node i right after it handled
// up to maxEarly messages that SendsBeforeDurableOn selects, each the next
// of its stream: every order of every prefix of the selected messages
// heading the streams to i.
func (s *State) appendEarlyCrashes(out []Event, i int, a node.Addr) []Event {
	if s.sys.early == nil || s.sys.restore == nil {
		return out
	}
	var qs [][]Envelope // per stream to i: its selected messages up front
	for _, q := range s.streams {
		if int(q.msgs[0].to)-1 != i || s.across(q.msgs[0]) {
			continue
		}
		var p []Envelope
		for _, m := range q.msgs {
			if len(p) == maxEarly || !s.sys.early(a, m.Msg) {
				break
			}
			p = append(p, m)
		}
		if len(p) > 0 {
			qs = append(qs, p)
		}
	}
	taken := make([]int, len(qs))
	var seq []Envelope
	var walk func()
	walk = func() {
		if len(seq) > 0 {
			out = append(out, Event{Kind: Crash, Node: a, Env: seq[len(seq)-1], Handled: slices.Clone(seq)})
		}
		if len(seq) == maxEarly {
			return
		}
		for j, p := range qs {
			if taken[j] < len(p) {
				seq = append(seq, p[taken[j]])
				taken[j]++
				walk()
				taken[j]--
				seq = seq[:len(seq)-1]
			}
		}
	}
	walk()
	return out
}

// earlyKey identifies a crash's handled messages (0 for a plain crash).
func (e Event) earlyKey() uint64 {
	var h uint64
	for _, x := range e.Handled {
		h = mix(h ^ x.hash)
	}
	return h
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
func (s *State) Apply(e Event) (*State, error) { return s.apply(e, !s.sys.noMemo, nil, false) }

// PartitionEvents is how long a cut lasts when Settings.PartitionEvents
// is 0.
const PartitionEvents = 4

func cutLength(set Settings) int {
	if set.PartitionEvents > 0 {
		return set.PartitionEvents
	}
	return PartitionEvents
}

// errNoOp is apply's answer, with skip, for an event Settings.SkipNoOps
// makes no step.
var errNoOp = errors.New("mc: no-op event")

// Sent is what the handler of one event asked for: unordered messages,
// stream appends and timers, in the order the handler made them
// (messages to crashed or unknown nodes included: the network drops them).
type Sent struct {
	Sends, Streams []Envelope
	Timers         []SentTimer
}

// SentTimer is a timer a handler set.
type SentTimer struct {
	T        node.Timer
	Min, Max time.Duration
}

// Lines describes each item of what was sent, one line each, in the
// order send, stream, timer.
func (st Sent) Lines() []string {
	var out []string
	for _, e := range st.Sends {
		out = append(out, fmt.Sprintf("send %s -> %s %s", e.From, e.To, Describe(e.Msg)))
	}
	for _, e := range st.Streams {
		out = append(out, fmt.Sprintf("stream %s -> %s %s", e.From, e.To, Describe(e.Msg)))
	}
	for _, t := range st.Timers {
		out = append(out, fmt.Sprintf("timer %s [%v, %v]", Describe(t.T), t.Min, t.Max))
	}
	return out
}

// ApplySent is Apply that also reports what the event's handler sent
// (nothing for Drop and Crash, or when the receiver has crashed).
func (s *State) ApplySent(e Event) (*State, Sent, error) {
	b := &builder{memo: !s.sys.noMemo, touched: -1, n: s.copyState()}
	n, err := s.applyWith(b, e)
	var st Sent
	if ef := b.ran; ef != nil {
		st.Sends, st.Streams = ef.sends, ef.streams
		for _, t := range ef.timers {
			st.Timers = append(st.Timers, SentTimer{T: t.T, Min: t.Min, Max: t.Max})
		}
	}
	return n, st, err
}

// scratch holds one worker's buffers for successor states that are built,
// fingerprinted and, unless new, thrown away: a state built in scratch
// borrows its buffers for the slices it changed, until freeze copies them.
type scratch struct {
	st      State
	net     []Envelope
	streams []stream
	timers  [][]pendingTimer
	nodes   []*instance
	// arena holds the message queues of streams the new state appended
	// to (stream.arena marks them).
	arena []Envelope
	// what st borrowed
	net_, streams_, timers_, nodes_ bool
}

// queue returns msgs followed by e, in the arena.
func (sc *scratch) queue(msgs []Envelope, e Envelope) []Envelope {
	n := len(msgs) + 1
	if cap(sc.arena)-len(sc.arena) < n {
		sc.arena = make([]Envelope, 0, max(256, 2*n))
	}
	k := len(sc.arena)
	sc.arena = append(append(sc.arena, msgs...), e)
	return sc.arena[k : k+n : k+n]
}

// freeze copies the state built in sc out of its buffers.
func (sc *scratch) freeze() *State {
	n := sc.st
	if sc.net_ {
		n.net = slices.Clone(n.net)
	}
	if sc.streams_ {
		n.streams = slices.Clone(n.streams)
		for i := range n.streams {
			if q := &n.streams[i]; q.arena {
				q.msgs, q.arena = slices.Clone(q.msgs), false
			}
		}
	}
	if sc.timers_ {
		n.timers = slices.Clone(n.timers)
	}
	if sc.nodes_ {
		n.nodes = slices.Clone(n.nodes)
	}
	return &n
}

// apply is Apply; memo says whether handler results may be reused, and
// sc, if not nil, holds the new state.
func (s *State) apply(e Event, memo bool, sc *scratch, skip bool) (*State, error) {
	b := &builder{memo: memo, touched: -1, sc: sc, skip: skip && (e.Kind == Deliver || e.Kind == Duplicate || e.Kind == Fire)}
	if sc != nil {
		sc.st = *s
		b.n = &sc.st
		clear(sc.arena) // drop references to the previous state's messages
		sc.arena = sc.arena[:0]
		sc.net_, sc.streams_, sc.timers_, sc.nodes_ = false, false, false, false
	} else {
		b.n = s.copyState()
	}
	return s.applyWith(b, e)
}

// applyWith applies e with builder b, whose new state starts as a copy of s.
func (s *State) applyWith(b *builder, e Event) (*State, error) {
	sc := b.sc
	var err error
	switch e.Kind {
	case Deliver, Duplicate, Drop:
		i := slices.IndexFunc(s.net, func(x Envelope) bool { return x.hash == e.Env.hash })
		if i < 0 {
			return nil, fmt.Errorf("mc: %v: no such message in flight", e)
		}
		env := s.net[i]
		switch e.Kind {
		case Duplicate:
			b.n.used.Duplicates++
		case Drop:
			b.n.used.Drops++
		}
		if e.Kind == Drop || e.Kind == Deliver && !s.sys.keep {
			b.ownNet()
			b.n.net = slices.Delete(b.n.net, i, i+1)
			b.n.netSum -= mix(env.hash)
		}
		if e.Kind != Drop {
			err = b.handle(int(env.to)-1, env.From, env.Msg, nil, env.hash)
		}
	case StreamIn:
		qi, ok := s.findStream(link{e.Env.From, e.Env.To})
		if !ok || s.streams[qi].msgs[0].hash != e.Env.hash {
			return nil, fmt.Errorf("mc: %v: not at the head of its stream", e)
		}
		env := s.streams[qi].msgs[0]
		b.popStream(qi)
		err = b.handle(int(env.to)-1, env.From, env.Msg, nil, env.hash)
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
		b.n.used.Fires++
		b.touch(i)
		b.ownTimers()
		b.n.timers[i] = slices.Delete(slices.Clone(s.timers[i]), j, j+1)
		err = b.handle(i, "", nil, t.T, t.hash)
	case Crash:
		i, ok := s.sys.index[e.Node]
		if !ok || s.crashed[i] {
			return nil, fmt.Errorf("mc: %v: not a live node", e)
		}
		if len(e.Handled) > 0 {
			if err = b.sendEarly(i, e.Handled); err != nil {
				return nil, err
			}
		}
		b.n.used.Crashes++
		b.touch(i)
		b.n.crashed = slices.Clone(s.crashed)
		b.n.crashed[i] = true
		b.ownTimers()
		b.n.timers[i] = nil
		if s.sys.restore == nil {
			b.endStreams(e.Node)
		}
		// Unordered messages to a crashed node can never be delivered.
		b.ownNet()
		b.n.net = slices.DeleteFunc(b.n.net, func(x Envelope) bool {
			if x.To == e.Node {
				b.n.netSum -= mix(x.hash)
				return true
			}
			return false
		})
	case Restart:
		i, ok := s.sys.index[e.Node]
		if !ok || !s.crashed[i] || s.sys.restore == nil {
			return nil, fmt.Errorf("mc: %v: not a crashed node of a restartable system", e)
		}
		b.n.used.Restarts++
		b.touch(i)
		b.n.crashed = slices.Clone(s.crashed)
		b.n.crashed[i] = false
		var ef *effect
		if ef, err = s.restart(i); err == nil {
			b.ran = ef
			b.ownNodes()
			b.n.nodes[i] = ef.inst
			b.flush(i, ef.sends, ef.streams, ef.timers)
		}
	case Partition:
		i, ok := s.sys.index[e.Node]
		if !ok || s.cut != 0 {
			return nil, fmt.Errorf("mc: %v: unknown node or a cut already", e)
		}
		b.n.used.Partitions++
		if e.Timer == 0 || e.Timer > 1<<20 {
			return nil, fmt.Errorf("mc: %v: bad length %d", e, e.Timer)
		}
		b.n.cut, b.n.cutLeft = int32(i+1), int32(e.Timer)
		b.ownNet()
		b.n.net = slices.DeleteFunc(b.n.net, func(x Envelope) bool {
			if b.n.across(x) {
				b.n.netSum -= mix(x.hash)
				return true
			}
			return false
		})
	case Heal:
		if s.cut == 0 || s.sys.addrs[s.cut-1] != e.Node {
			return nil, fmt.Errorf("mc: %v: no such cut", e)
		}
		b.n.cut, b.n.cutLeft = 0, 0
	case Sync:
		i, ok := s.sys.index[e.Node]
		if !ok || s.crashed[i] || s.nodes[i].disk == nil {
			return nil, fmt.Errorf("mc: %v: not a live node ahead of its disk", e)
		}
		in := s.nodes[i]
		b.touch(i)
		b.ownNodes()
		b.n.nodes[i] = &instance{nd: in.nd, h: in.h}
		b.flush(i, in.held, nil, nil)
	default:
		return nil, fmt.Errorf("mc: unknown event kind %d", e.Kind)
	}
	if b.noop && err == nil {
		return nil, errNoOp
	}
	if s.cut != 0 && e.Kind != Partition && e.Kind != Heal && e.Kind != Sync {
		if b.n.cutLeft--; b.n.cutLeft <= 0 {
			b.n.cut, b.n.cutLeft = 0, 0
		}
	}
	b.finish()
	if sc != nil {
		// Keep the buffers the new state grew, and note what it borrowed.
		sc.net_, sc.streams_, sc.timers_, sc.nodes_ = b.net, b.streams, b.timers, b.nodes
		if b.net {
			sc.net = b.n.net[:0]
		}
		if b.streams {
			sc.streams = b.n.streams[:0]
		}
		if b.timers {
			sc.timers = b.n.timers[:0]
		}
		if b.nodes {
			sc.nodes = b.n.nodes[:0]
		}
	}
	return b.n, err
}

// HandlerPanic reports a node handler that panicked.
type HandlerPanic struct {
	Node  node.Addr
	Value any
}

func (p *HandlerPanic) Error() string { return fmt.Sprintf("node %s panicked: %v", p.Node, p.Value) }

// builder makes a new state from a copy of an old one, copying each shared
// slice before its first change and keeping the fingerprint's parts.
type builder struct {
	n    *State
	memo bool
	sc   *scratch // buffers to copy into, or nil
	// the slices already copied
	net, streams, timers, nodes bool
	// touched is the node whose part was taken out of nodeSum (-1: none)
	touched int
	// ran is the effect of the handler the event ran, if any
	ran *effect
	// skip: the event is no step if its handler is a no-op (noop is set)
	skip, noop bool
}

// own gives the builder its own copy of *s the first time it changes
// it (done records that), in buf's storage when it has scratch space.
func own[T any](done *bool, s *[]T, buf []T) {
	if !*done {
		*s = append(buf[:0], *s...)
		*done = true
	}
}

// noScratch stands in for a builder without scratch space: its slices
// are nil, so own allocates.
var noScratch scratch

func (b *builder) buf() *scratch {
	if b.sc != nil {
		return b.sc
	}
	return &noScratch
}

func (b *builder) ownNet()     { own(&b.net, &b.n.net, b.buf().net) }
func (b *builder) ownStreams() { own(&b.streams, &b.n.streams, b.buf().streams) }
func (b *builder) ownTimers()  { own(&b.timers, &b.n.timers, b.buf().timers) }
func (b *builder) ownNodes()   { own(&b.nodes, &b.n.nodes, b.buf().nodes) }

// touch takes node i's part out of the node sum before i's hash, crash
// flag or timers change; finish puts it back. One node per event.
func (b *builder) touch(i int) {
	if b.touched == i {
		return
	}
	if b.touched >= 0 {
		panic("mc: two nodes changed by one event")
	}
	b.touched = i
	b.n.nodeSum -= b.n.nodePart(i)
}

func (b *builder) finish() {
	if b.touched >= 0 {
		b.n.nodeSum += b.n.nodePart(b.touched)
	}
	b.n.fp = b.n.fingerprint()
}

// endStreams ends every stream to or from a, whose incarnation crashed or
// was replaced: the checker's implementation of the node API's stream rule
// (node's package doc). The checker sees every incarnation, so it ends an
// incarnation's streams the moment it ends; what a peer streams to a later
// opens a stream to the new incarnation, and so a peer learning of the
// replacement (node.Peered) ends nothing more here.
func (b *builder) endStreams(a node.Addr) {
	b.ownStreams()
	b.n.streams = slices.DeleteFunc(b.n.streams, func(q stream) bool {
		if q.link.From == a || q.link.To == a {
			b.n.streamSum -= streamPart(&q)
			return true
		}
		return false
	})
}

func (b *builder) popStream(qi int) {
	b.ownStreams()
	q := &b.n.streams[qi]
	b.n.streamSum -= streamPart(q)
	if len(q.msgs) > 1 {
		q.msgs = q.msgs[1:]
		b.n.streamSum += streamPart(q)
	} else {
		b.n.streams = slices.Delete(b.n.streams, qi, qi+1)
	}
}

// memoKey names one handler run: node i in the state hashing h handles
// the message or timer hashing ev.
type memoKey struct {
	h, ev uint64
	i     int32
	timer bool
}

// effect is what one handler run did: the new node and its hash, the
// messages and timers it asked for, and how many operations a client
// completed.
// Effects are shared between states and never modified.
type effect struct {
	inst    *instance
	sends   []Envelope
	streams []Envelope
	timers  []pendingTimer
	replies int
}

// handle runs one handler of node i (a clone of it, or a stored result of
// the same run) and adds its effects to the state. A crashed node ignores
// everything. The new node is hashed before it is shared.
func (b *builder) handle(i int, from node.Addr, m node.Message, t node.Timer, evh uint64) error {
	if b.startsAt(i, m) {
		b.skip = false // starting an incarnation is a step even if its handler does nothing
	}
	b.startIncarnation(i, m)
	n := b.n
	if i < 0 || n.crashed[i] {
		return nil
	}
	key := memoKey{h: n.nodes[i].h, ev: evh, i: int32(i), timer: m == nil}
	shard := mix(key.h ^ key.ev)
	ef, ok := (*effect)(nil), false
	if b.memo {
		ef, ok = n.sys.memo.Get(key, shard)
	}
	if !ok {
		var err error
		if ef, err = n.run(i, from, m, t); err != nil {
			return err
		}
		if b.memo {
			n.sys.memo.Put(key, shard, ef)
		}
	}
	b.ran = ef
	if b.skip && ef.inst.h == n.nodes[i].h && len(ef.sends) == 0 && len(ef.streams) == 0 && len(ef.timers) == 0 && ef.replies == 0 {
		b.noop = true
		return nil
	}
	b.touch(i)
	b.ownNodes()
	inst, sends := ef.inst, ef.sends
	if n.sys.lags(i) {
		var err error
		if inst, sends, err = n.ahead(i, ef); err != nil {
			return err
		}
	}
	n.nodes[i] = inst
	if ef.replies > 0 {
		ci := uint8(slices.Index(n.sys.clients, i))
		n.returns = slices.Clone(n.returns)
		for k := 0; k < ef.replies; k++ {
			n.returns = append(n.returns, ci)
			n.retHash = returnHash(n.retHash, ci)
		}
	}
	b.flush(i, sends, ef.streams, ef.timers)
	return nil
}

// sendEarly runs node i's handlers of the handled messages, each the next
// of its stream, on a clone, and sends their unordered messages, leaving
// the node, its streams, its timers and the messages as they are
// (SendsBeforeDurableOn).
func (b *builder) sendEarly(i int, handled []Envelope) (err error) {
	s := b.n
	a := s.sys.addrs[i]
	taken := map[link]int{}
	for _, env := range handled {
		l := link{env.From, env.To}
		qi, ok := s.findStream(l)
		if !ok || int(env.to)-1 != i || taken[l] >= len(s.streams[qi].msgs) || s.streams[qi].msgs[taken[l]].hash != env.hash {
			return fmt.Errorf("mc: crash %s after %s: not the next message of its stream", a, Describe(env.Msg))
		}
		taken[l]++
	}
	nd := s.sys.clone(s.nodes[i].nd, s.nodes[i].h)
	ctx := &simContext{sys: s.sys, self: a}
	defer func() {
		if r := recover(); r != nil {
			err = &HandlerPanic{Node: a, Value: r}
		}
	}()
	for _, env := range handled {
		nd.Handle(ctx, env.From, env.Msg)
	}
	b.flush(i, ctx.sends, nil, nil)
	return nil
}

// run runs the handler on a clone of node i.
func (s *State) run(i int, from node.Addr, m node.Message, t node.Timer) (ef *effect, err error) {
	old := s.nodes[i].nd
	nd := s.sys.clone(old, s.nodes[i].h)
	ctx := &simContext{sys: s.sys, self: s.sys.addrs[i]}
	defer func() {
		if r := recover(); r != nil {
			ef, err = nil, &HandlerPanic{Node: ctx.self, Value: r}
		}
	}()
	if m != nil {
		nd.Handle(ctx, from, m)
	} else {
		nd.Timer(ctx, t)
	}
	ef = &effect{inst: &instance{nd: nd, h: nd.Hash()}, sends: ctx.sends, streams: ctx.streams, timers: ctx.timers}
	if s.sys.behind != nil && s.sys.behind(ctx.self, m) {
		ef.inst.prev, ef.inst.prevH = old, s.nodes[i].h
	}
	if c, ok := s.sys.clientOf(nd); ok {
		was, _ := s.sys.clientOf(old)
		ef.replies = max(0, c.Returned()-was.Returned())
	}
	return ef, nil
}

// simContext collects a handler's effects.
type simContext struct {
	sys     *system
	self    node.Addr
	sends   []Envelope
	streams []Envelope
	timers  []pendingTimer
}

func (c *simContext) Self() node.Addr { return c.self }

func (c *simContext) envelope(to node.Addr, m node.Message) Envelope {
	e := newEnvelope(c.self, to, m)
	e.from = int32(c.sys.index[c.self] + 1)
	if j, ok := c.sys.index[to]; ok {
		e.to = int32(j + 1)
	}
	return e
}

func (c *simContext) Send(to node.Addr, m node.Message) {
	c.sends = append(c.sends, c.envelope(to, m))
}

func (c *simContext) Stream(to node.Addr, m node.Message) {
	c.streams = append(c.streams, c.envelope(to, m))
}

func (c *simContext) SetTimer(t node.Timer, min, max time.Duration) {
	c.timers = append(c.timers, pendingTimer{T: t, Min: min, Max: max, hash: node.HashOf(t)})
}

// flush adds node i's effects to the state. Messages to unknown or crashed
// nodes are dropped.
func (b *builder) flush(i int, sends, streams []Envelope, timers []pendingTimer) {
	n := b.n
	live := func(e Envelope) bool { return e.to > 0 && !n.crashed[e.to-1] }
	if obs := n.sys.observe; obs != nil {
		for _, e := range sends {
			obs(e, false)
		}
		for _, e := range streams {
			obs(e, true)
		}
	}
	for _, e := range sends {
		if n.across(e) {
			continue // lost in the cut
		}
		if n.sys.keep && n.inFlight(e.hash) {
			continue // a set: sent before
		}
		if live(e) || b.startsAt(int(e.to)-1, e.Msg) {
			b.ownNet()
			n.net = append(n.net, e)
			n.netSum += mix(e.hash)
		}
	}
	for _, e := range streams {
		// A crashed receiver that may restart keeps its streams: what is
		// streamed to it waits for the restart, as the runtime's resumed
		// streams do.
		if !live(e) && (n.sys.restore == nil || e.to <= 0) {
			continue
		}
		b.ownStreams()
		l := link{e.From, e.To}
		qi, ok := n.findStream(l)
		if ok {
			q := &n.streams[qi]
			n.streamSum -= streamPart(q)
			if b.sc != nil {
				q.msgs, q.arena = b.sc.queue(q.msgs, e), true
			} else {
				q.msgs = append(q.msgs[:len(q.msgs):len(q.msgs)], e)
			}
			n.streamSum += streamPart(q)
		} else {
			q := stream{link: l, lh: linkHash(e.from, e.to)}
			if b.sc != nil {
				q.msgs, q.arena = b.sc.queue(nil, e), true
			} else {
				q.msgs = []Envelope{e}
			}
			n.streams = slices.Insert(n.streams, qi, q)
			n.streamSum += streamPart(&n.streams[qi])
		}
	}
	if len(timers) > 0 {
		b.touch(i)
		b.ownTimers()
		n.timers[i] = append(n.timers[i][:len(n.timers[i]):len(n.timers[i])], timers...)
	}
}
