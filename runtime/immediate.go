package runtime

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/node"
)

// The immediate safety check, CrystalBall's last line of defence
// (docs/model-checking.md, "Online checking"): before a message of a
// chosen kind is applied to a node, the handler runs on a clone of the
// node with its effects held, and a node-local invariant is evaluated on
// the clone against the node. If it fails, the message is postponed: held
// in the loop, unacknowledged, and retried after Retry against the node's
// newer state; the messages of the same stream behind it wait with it (a
// stream is delivered in order). Postponed messages are checked as a
// group: when a later message passes the check on top of them, they are
// applied together in one batch, whose effects leave only after all of
// them (batch.go), so no other node sees the states between. After
// MaxHold the message is applied anyway, so that a check that can
// never pass does not stall the node.

// ImmediateCheck configures the immediate safety check of a host.
type ImmediateCheck struct {
	// Kinds are the message kinds checked (MessageKind).
	Kinds []string
	// Check is the node-local invariant: it gets the node before the
	// message and the clone after it, and returns an error if the step
	// breaks the invariant.
	Check func(a node.Addr, before, after node.Node) error
	// Retry is the postponement (default 2ms); MaxHold bounds how long
	// one message is held (default 5s).
	Retry   time.Duration
	MaxHold time.Duration
	// Monitor only counts the steps that break the invariant (as Refused)
	// and applies them.
	Monitor bool
}

// ImmediateStats counts the immediate check's work on a host.
type ImmediateStats struct {
	Checked    int64 // messages checked (each try)
	Refused    int64 // messages postponed at least once (Monitor: steps that broke the invariant, applied)
	LetThrough int64 // messages applied after being held MaxHold
	Steered    int64 // messages a check filter (CheckPrefix) postponed at least once
}

type immediate struct {
	c                                  atomic.Pointer[immCheck]
	checked, refused, through, steered atomic.Int64
}

type immCheck struct {
	ImmediateCheck
	kinds map[string]bool
}

// SetImmediateCheck turns the immediate check on (nil: off). A host
// without it pays one atomic load per message.
func (h *Host) SetImmediateCheck(c *ImmediateCheck) {
	if c == nil {
		h.imm.c.Store(nil)
		return
	}
	h.imm.c.Store(newImmCheck(c))
}

// StepCheck is the invariant a check filter (CheckPrefix) runs on the
// kinds it names: DataCommitCheck, the one node-local invariant. Read
// only: hosts use a copy made at start.
var StepCheck = DataCommitCheck()

var stepCheck = newImmCheck(StepCheck)

func newImmCheck(c *ImmediateCheck) *immCheck {
	ic := &immCheck{ImmediateCheck: *c, kinds: map[string]bool{}}
	if ic.Retry <= 0 {
		ic.Retry = 2 * time.Millisecond
	}
	if ic.MaxHold <= 0 {
		ic.MaxHold = 5 * time.Second
	}
	for _, k := range c.Kinds {
		ic.kinds[k] = true
	}
	return ic
}

// ImmediateStats reads the host's counts.
func (h *Host) ImmediateStats() ImmediateStats {
	return ImmediateStats{h.imm.checked.Load(), h.imm.refused.Load(), h.imm.through.Load(), h.imm.steered.Load()}
}

// refuses reports whether ev is held instead of applied now: it is behind
// a held message of its stream, or the check fails on it. A message that
// fails is also kept in the loop's speculative clone (spec) until the end
// of the batch: a later message whose step from the node through the
// speculative messages passes the check is applied together with them
// (returned as first), in this batch, whose effects leave together.
// A check filter (CheckPrefix) live at the node for the message's kind
// checks it with StepCheck and postpones it, whatever the host's check.
// Loop goroutine only.
func (l *loop) refuses(ev event) (refused bool, first []event) {
	filters := l.h.steer.n.Load() != 0
	if (filters || len(l.held) > 0) && l.steerHolds(ev) {
		return true, nil
	}
	ic := l.h.imm.c.Load()
	steered := filters && ev.m != nil && l.h.steer.checking(l.addr, MessageKind(ev.m))
	if ic == nil && len(l.held) == 0 && !steered {
		return false, nil
	}
	base := ic
	if steered {
		ic = stepCheck
	}
	// A message behind a held one of its stream waits; it joins the
	// speculative clone if everything held of its stream is in it.
	behind := ev.seq > 0 && l.holdsStream(ev.from, ev.sid)
	if behind && (ic == nil || l.spec == nil || !l.streamInSpec(ev.from, ev.sid)) {
		l.hold(ev)
		return true, nil
	}
	if !behind && (ic == nil || !ic.kinds[MessageKind(ev.m)]) {
		return false, nil
	}
	l.h.imm.checked.Add(1)
	c := l.spec
	if c == nil {
		c = l.n.Clone()
	}
	c.Handle(&hctx{self: l.addr}, ev.from, ev.m)
	err := ic.Check(l.addr, l.n, c)
	if err == nil {
		first = l.specEvs
		l.held = slices.DeleteFunc(l.held, func(e event) bool {
			return slices.ContainsFunc(first, func(f event) bool { return f.hid == e.hid })
		})
		l.spec, l.specEvs = nil, nil
		return false, first
	}
	if behind {
		l.spec, l.specEvs = c, append(l.specEvs, l.hold(ev))
		return true, nil
	}
	if ic.Monitor {
		l.h.imm.refused.Add(1)
		return false, nil
	}
	if !ev.held.IsZero() && time.Since(ev.held) >= ic.MaxHold {
		l.h.imm.through.Add(1)
		if base != nil && base.Monitor {
			l.h.imm.refused.Add(1) // a step that breaks the invariant, applied
		}
		return false, nil
	}
	if ev.held.IsZero() {
		ev.held = time.Now()
		if steered {
			l.h.imm.steered.Add(1)
		} else {
			l.h.imm.refused.Add(1)
		}
		l.h.opts.Metrics.EventRefused(l.addr)
		l.h.log.Debug("immediate check postpones a message", "at", l.addr, "from", ev.from, "kind", MessageKind(ev.m), "err", err)
	}
	ev = l.hold(ev)
	l.spec, l.specEvs = c, append(l.specEvs, ev)
	l.retryAfter(ic.Retry)
	return true, nil
}

// hold appends ev to the held messages, with an id.
func (l *loop) hold(ev event) event {
	l.nextHid++
	ev.hid = l.nextHid
	l.held = append(l.held, ev)
	return ev
}

// streamInSpec reports whether every held message of stream sid from
// from is in the speculative clone.
func (l *loop) streamInSpec(from node.Addr, sid uint64) bool {
	for _, e := range l.held {
		if e.seq > 0 && e.from == from && e.sid == sid && !slices.ContainsFunc(l.specEvs, func(f event) bool { return f.hid == e.hid }) {
			return false
		}
	}
	return true
}

// holdsStream reports whether a message of stream sid from from is held.
func (l *loop) holdsStream(from node.Addr, sid uint64) bool {
	for _, e := range l.held {
		if e.seq > 0 && e.from == from && e.sid == sid {
			return true
		}
	}
	return false
}

// DataCommitCheck is the immediate check of the data servers' commits:
// PREPARE-OK is checked against data.CheckStep (a commit needs f
// acknowledgements on every stripe, and commits go in op order). Other
// nodes are not checked.
func DataCommitCheck() *ImmediateCheck {
	return &ImmediateCheck{Kinds: []string{"PrepareOK"}, Check: func(_ node.Addr, before, after node.Node) error {
		b, ok := before.(*data.Server)
		if !ok {
			return nil
		}
		return data.CheckStep(b, after.(*data.Server))
	}}
}
