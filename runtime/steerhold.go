package runtime

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// Hold filters (steer.go): a receiver holds the messages of one kind, from
// one sender or from all, optionally only those that carry an operation
// number of at least MinOp or a given stripe. A held message waits in the
// loop unacknowledged (a cut counts it in flight), with the messages of
// its stream behind it (a stream is delivered in order); when the filter
// expires, the held messages are applied in the order of their keys: the
// highest operation number carried so far on their stream (so a stream
// keeps its order), then the sender, the stream and the sequence number.
// The filter matches messages only: it consults no state and no check.

// Hold is a hold filter's kind parsed: HoldPrefix + Kind, then, after
// '@', "op>=N" and "stripe=S" separated by ','.
type Hold struct {
	Kind   string
	MinOp  uint64 // 0: any operation
	Stripe int    // -1: any stripe
}

// String is the filter kind of h.
func (h Hold) String() string {
	var q []string
	if h.MinOp > 0 {
		q = append(q, fmt.Sprintf("op>=%d", h.MinOp))
	}
	if h.Stripe >= 0 {
		q = append(q, fmt.Sprintf("stripe=%d", h.Stripe))
	}
	if len(q) == 0 {
		return HoldPrefix + h.Kind
	}
	return HoldPrefix + h.Kind + "@" + strings.Join(q, ",")
}

// ParseHold parses a hold filter's kind; ok is false if kind is not one.
func ParseHold(kind string) (h Hold, ok bool, err error) {
	rest, ok := strings.CutPrefix(kind, HoldPrefix)
	if !ok {
		return Hold{}, false, nil
	}
	h = Hold{Stripe: -1}
	h.Kind, rest, _ = strings.Cut(rest, "@")
	if h.Kind == "" {
		return h, true, fmt.Errorf("hold filter %q: no message kind", kind)
	}
	for q := range strings.SplitSeq(rest, ",") {
		switch {
		case q == "":
		case strings.HasPrefix(q, "op>="):
			h.MinOp, err = strconv.ParseUint(q[len("op>="):], 10, 64)
		case strings.HasPrefix(q, "stripe="):
			h.Stripe, err = strconv.Atoi(q[len("stripe="):])
			if err == nil && h.Stripe < 0 {
				err = fmt.Errorf("negative stripe")
			}
		default:
			err = fmt.Errorf("unknown qualifier %q", q)
		}
		if err != nil {
			return h, true, fmt.Errorf("hold filter %q: %v (want op>=N and stripe=S)", kind, err)
		}
	}
	return h, true, nil
}

// Matches reports whether h holds message m: its kind, and the operation
// and stripe it carries if h names them (a message that carries none is
// not held by a filter that names one).
func (h Hold) Matches(m any) bool {
	if MessageKind(m) != h.Kind {
		return false
	}
	if op, ok := OpOf(m); h.MinOp > 0 && (!ok || op < h.MinOp) {
		return false
	}
	st, ok := StripeOf(m)
	return h.Stripe < 0 || ok && st == h.Stripe
}

// OpOf is the operation number m carries (its OpNum field), if any.
func OpOf(m any) (uint64, bool) {
	f := messageField(m, "OpNum")
	if !f.IsValid() || !f.CanUint() {
		return 0, false
	}
	return f.Uint(), true
}

// StripeOf is the stripe m carries (its Stripe field), if any.
func StripeOf(m any) (int, bool) {
	f := messageField(m, "Stripe")
	if !f.IsValid() || !f.CanInt() {
		return 0, false
	}
	return int(f.Int()), true
}

func messageField(m any, name string) reflect.Value {
	v := reflect.ValueOf(m)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.FieldByName(name)
}

// holdKey orders the messages held for hold filters when they are
// released.
type holdKey struct {
	op       uint64 // the highest operation number on the stream so far
	from     node.Addr
	sid, seq uint64
}

func (k holdKey) compare(o holdKey) int {
	return cmp.Or(cmp.Compare(k.op, o.op), cmp.Compare(k.from, o.from), cmp.Compare(k.sid, o.sid), cmp.Compare(k.seq, o.seq))
}

// holds is until when a hold filter holds message m from from at at
// (zero: none does), and the filters that hold it.
func (s *steering) holds(at, from node.Addr, m node.Message) (time.Time, []steerFilter) {
	if s.n.Load() == 0 || m == nil {
		return time.Time{}, nil
	}
	var fs []steerFilter
	u := s.latest(func(f steerFilter) bool {
		ok := f.hold != nil && f.to == at && (f.from == at || f.from == from) && f.hold.Matches(m)
		if ok {
			fs = append(fs, f)
		}
		return ok
	})
	return u, fs
}

// holdState is a loop's messages held for hold filters: their keys by
// their id in the loop's held messages, the filters that held them (kept
// past their expiry until they are all applied), and the operation
// released last and when.
type holdState struct {
	keys  map[uint64]holdKey
	holds []steerFilter
	relOp uint64
	relAt time.Time
}

// matches reports whether one of the filters that held st's messages
// matches m from from at at.
func (st *holdState) matches(at, from node.Addr, m node.Message) bool {
	return slices.ContainsFunc(st.holds, func(f steerFilter) bool {
		return f.to == at && (f.from == at || f.from == from) && f.hold.Matches(m)
	})
}

// stateOf is l's hold state (created on first use).
func (s *steering) stateOf(l *loop) *holdState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[*loop]*holdState{}
	}
	if s.held[l] == nil {
		s.held[l] = &holdState{keys: map[uint64]holdKey{}}
	}
	return s.held[l]
}

// track counts a message held (d 1) or let go (d -1) in n, so that a
// host keeps looking while it holds messages after its filters expired.
func (s *steering) track(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nheld += d
	s.n.Store(int64(len(s.fs) + s.nheld))
}

// HoldStats is how many messages hold filters held (each counted once,
// those behind a held one on its stream included).
func (h *Host) HoldStats() int64 { return h.steer.heldN.Load() }

// drainStep is the time between the operations applied once a hold
// filter expired.
const drainStep = 2 * time.Millisecond

// steerHolds reports whether ev is held for a hold filter: one matches it,
// or it is behind a message held for one on its stream. A held message
// goes into the loop's held messages in key order (among those held for
// hold filters), and a retry is posted for when the filter expires.
// Once the filters expired, the held messages are applied one operation
// (key) at a time, the lowest first, drainStep apart, so that a message in
// transit when they expired lands before the operations after its own;
// a message the expired filters match that arrives meanwhile, for an
// operation after the one applied last, joins them. A message behind one
// the immediate check holds is left to the check. Called only when a
// filter is live or a message held. Loop goroutine only.
func (l *loop) steerHolds(ev event) bool {
	s := &l.h.steer
	if ev.m == nil {
		return false
	}
	st := s.stateOf(l)
	k, again := st.keys[ev.hid]
	if again {
		delete(st.keys, ev.hid) // re-handled from the held messages
		s.track(-1)
	}
	var prev *holdKey // the last message of ev's stream held for a filter
	for _, e := range l.held {
		if ev.seq == 0 || e.from != ev.from || e.sid != ev.sid {
			continue
		}
		pk, ok := st.keys[e.hid]
		if !ok {
			return false // behind a message the check holds
		}
		prev = &pk
	}
	if !again {
		k = holdKey{from: ev.from, sid: ev.sid, seq: ev.seq}
		k.op, _ = OpOf(ev.m)
		if prev != nil {
			k.op = max(k.op, prev.op)
		}
	}
	until, fs := time.Time{}, []steerFilter(nil)
	if prev == nil {
		until, fs = s.holds(l.addr, ev.from, ev.m)
	}
	retry := time.Duration(-1) // none: the message ahead of it posted one
	switch {
	case prev != nil || !until.IsZero():
		if !until.IsZero() {
			retry = time.Until(until) + time.Millisecond
		}
		for _, f := range fs {
			if !slices.ContainsFunc(st.holds, func(h steerFilter) bool { return h.from == f.from && h.kind == f.kind }) {
				st.holds = append(st.holds, f)
			}
		}
	case again && k.op <= st.relOp:
		return false // its operation is being applied
	case again && time.Since(st.relAt) >= drainStep:
		st.relOp, st.relAt = k.op, time.Now() // the next operation
		return false
	case again || len(st.keys) > 0 && k.op > st.relOp && st.matches(l.addr, ev.from, ev.m):
		retry = drainStep
	default:
		if len(st.keys) == 0 {
			st.holds, st.relOp = nil, 0
		}
		return false
	}
	if !again {
		s.heldN.Add(1)
	}
	l.nextHid++
	ev.hid = l.nextHid
	st.keys[ev.hid] = k
	s.track(1)
	// After the last message held for a filter whose key is not above
	// ev's, else before the first one.
	at, first, last := len(l.held), -1, -1
	for i, e := range l.held {
		if o, ok := st.keys[e.hid]; ok && e.hid != ev.hid {
			if first < 0 {
				first = i
			}
			if o.compare(k) <= 0 {
				last = i
			}
		}
	}
	switch {
	case last >= 0:
		at = last + 1
	case first >= 0:
		at = first
	}
	l.held = slices.Insert(l.held, at, ev)
	if retry >= 0 {
		l.retryAfter(retry)
	}
	return true
}

// retryAfter posts a retry of the held messages after d, unless one is
// posted.
func (l *loop) retryAfter(d time.Duration) {
	if l.retrying {
		return
	}
	l.retrying = true
	time.AfterFunc(d, func() {
		if l.h.ctx.Err() == nil {
			_ = l.post(l.h.ctx, event{retry: true})
		}
	})
}
