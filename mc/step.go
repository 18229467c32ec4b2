package mc

import (
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// Queue is one ordered stream: its link and its messages, head first.
type Queue struct {
	From, To node.Addr
	Msgs     []Envelope
}

// Queues lists the ordered streams in link order. Callers must not
// modify the messages.
func (s *State) Queues() []Queue {
	out := make([]Queue, len(s.streams))
	for i, q := range s.streams {
		out[i] = Queue{From: q.link.From, To: q.link.To, Msgs: q.msgs}
	}
	return out
}

// PendingTimer is a timer a node set that has not fired. Ready says
// whether DSLabs' rule lets it fire now.
type PendingTimer struct {
	T        node.Timer
	Min, Max time.Duration
	Ready    bool
}

// Timers lists the pending timers of the node at a, in the order set.
func (s *State) Timers(a node.Addr) []PendingTimer {
	i, ok := s.sys.index[a]
	if !ok {
		return nil
	}
	ts := s.timers[i]
	out := make([]PendingTimer, len(ts))
	for j, t := range ts {
		out[j] = PendingTimer{T: t.T, Min: t.Min, Max: t.Max, Ready: timerReady(ts, j)}
	}
	return out
}

// EventKey names an event the way trace files do (kind, link, message or
// timer hash, node): equal keys in one state are the same event.
func EventKey(e Event) string {
	te := encodeEvent(e)
	return te.Kind + "|" + te.From + "|" + te.To + "|" + te.Msg + "|" + te.Node + "|" + te.Timer
}
