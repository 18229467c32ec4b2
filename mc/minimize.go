package mc

import "errors"

// MinimizeCausal shrinks a violating trace further than Minimize. It
// removes chunks of events (halves, then quarters, ... down to single
// events, delta-debugging style) and replays the rest leniently: every
// event no longer possible is skipped with it, so an event goes together
// with its consequences (deliveries of the messages it sent, firings of
// the timers it set, and the events whose messages changed because it is
// gone). A removal is kept when the same invariant still fails. Single
// events are then removed the same way until none can be.
func MinimizeCausal(init *State, events []Event, inv []Predicate, pred string) []Event {
	var p *Predicate
	for i := range inv {
		if inv[i].Name == pred {
			p = &inv[i]
		}
	}
	cur, ok := lenient(init, events, p, pred)
	if !ok {
		return events
	}
	// try removes cur[i:i+n] and keeps what still fails.
	try := func(i, n int) bool {
		rest := append(append([]Event(nil), cur[:i]...), cur[i+n:]...)
		if got, ok := lenient(init, rest, p, pred); ok && len(got) < len(cur) {
			cur = got
			return true
		}
		return false
	}
	for n := len(cur) / 2; n > 1; n /= 2 {
		for i := len(cur) - n; i >= 0 && len(cur) >= n; i -= n {
			try(min(i, len(cur)-n), n)
		}
	}
	for again := true; again; {
		again = false
		for i := len(cur) - 1; i >= 0; i-- {
			if i < len(cur) && try(i, 1) {
				again = true
			}
		}
	}
	return cur
}

// lenient replays events from init, skipping those not possible in the
// state reached, up to the first state where p fails (or a handler
// panics, for HandlerPanicPredicate). It returns the events applied and
// whether the trace ends in that violation.
func lenient(init *State, events []Event, p *Predicate, pred string) ([]Event, bool) {
	var out []Event
	s := init
	for _, e := range events {
		next, err := s.Apply(e)
		if err != nil {
			var hp *HandlerPanic
			if errors.As(err, &hp) && pred == HandlerPanicPredicate {
				return append(out, e), true
			}
			continue
		}
		out = append(out, e)
		s = next
		if p != nil {
			if ok, _ := p.Check(s); !ok {
				return out, true
			}
		}
	}
	return out, false
}
