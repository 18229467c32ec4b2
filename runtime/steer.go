package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Execution steering: event filters that refuse some events for a while
// (docs/model-checking.md, "Online checking"). Each refuses only what the
// protocol tolerates:
//
//   - a message kind (a type's name, "SnapshotData"): the unordered
//     messages of that kind from one node to another are dropped (they may
//     be lost);
//   - StreamKind: the stream from one node to another is paused: its
//     connection breaks and does not reconnect before the filter expires;
//     the sender then resends what was not acknowledged (exactly once,
//     late);
//   - TimerPrefix + a timer type's name, from a node to itself: that
//     node's timers of that type are postponed until the filter expires;
//   - CheckPrefix + a message kind, from a node to itself: that node's
//     messages of that kind pass the immediate check (immediate.go) and
//     are postponed when their step breaks it, as with SetImmediateCheck;
//   - HoldPrefix + a message kind, optionally narrowed by the operation
//     and stripe the message carries (Hold): the messages of that kind
//     that to receives from from (from every sender when from is to) are
//     held at the receiver, unacknowledged, with the messages of their
//     stream behind them, and released when the filter expires, in the
//     order of the operations they carry (steerhold.go). No state is
//     consulted: the filter matches messages only.

// Filter kinds beyond message kinds.
const (
	StreamKind  = "stream"
	TimerPrefix = "timer:"
	CheckPrefix = "check:"
	HoldPrefix  = "hold:"
)

// steerFilter refuses the events of kind from one node to another until a
// deadline.
type steerFilter struct {
	from, to node.Addr
	kind     string
	until    time.Time
	hold     *Hold // a hold filter's kind, parsed
}

// steering is a host's filters; n counts them, so that a host without
// any pays one atomic load per message, stream frame or timer.
type steering struct {
	n  atomic.Int64
	mu sync.Mutex
	fs []steerFilter
	// held is each loop's messages held for hold filters (steerhold.go).
	held  map[*loop]*holdState
	nheld int // messages in held, counted in n
	heldN atomic.Int64
}

// MessageKind is the name filters match a message (or timer) by: its
// type's name without the package ("SnapshotData").
func MessageKind(m any) string {
	t := fmt.Sprintf("%T", m)
	return t[strings.LastIndexByte(t, '.')+1:]
}

// Steer refuses the events of kind (above) from from to to, for d.
func (h *Host) Steer(from, to node.Addr, kind string, d time.Duration) {
	s := &h.steer
	s.mu.Lock()
	defer s.mu.Unlock()
	f := steerFilter{from: from, to: to, kind: kind, until: time.Now().Add(d)}
	if hd, ok, err := ParseHold(kind); ok && err == nil {
		f.hold = &hd
	}
	s.fs = append(s.fs, f)
	s.n.Store(int64(len(s.fs) + s.nheld))
	h.log.Info("event filter installed", "from", from, "to", to, "kind", kind, "for", d)
}

// Unsteer ends the filters of kind from from to to before they expire. A
// dropped message kind passes again at once; a timer, stream or hold
// already waiting keeps the deadline it read.
func (h *Host) Unsteer(from, to node.Addr, kind string) {
	s := &h.steer
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fs = slices.DeleteFunc(s.fs, func(f steerFilter) bool { return f.from == from && f.to == to && f.kind == kind })
	s.n.Store(int64(len(s.fs) + s.nheld))
}

// until is the latest deadline of the live filters of kind from from to
// to (zero if none), forgetting expired filters.
func (s *steering) until(from, to node.Addr, kind string) time.Time {
	return s.latest(func(f steerFilter) bool { return f.from == from && f.to == to && f.kind == kind })
}

// latest is the latest deadline of the live filters that match (zero if
// none), forgetting expired filters.
func (s *steering) latest(match func(steerFilter) bool) time.Time {
	if s.n.Load() == 0 {
		return time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	live := s.fs[:0]
	var u time.Time
	for _, f := range s.fs {
		if now.After(f.until) {
			continue
		}
		live = append(live, f)
		if match(f) && f.until.After(u) {
			u = f.until
		}
	}
	s.fs = live
	s.n.Store(int64(len(live) + s.nheld))
	return u
}

// drops reports whether a filter drops the unordered message m.
func (s *steering) drops(from, to node.Addr, m node.Message) bool {
	return s.n.Load() != 0 && !s.until(from, to, MessageKind(m)).IsZero()
}

// paused is when the pause of the stream from from to to ends (zero: not
// paused).
func (s *steering) paused(from, to node.Addr) time.Time {
	if s.n.Load() == 0 {
		return time.Time{}
	}
	return s.until(from, to, StreamKind)
}

// postponed is until when at's timer t is postponed (zero: it is not).
func (s *steering) postponed(at node.Addr, t node.Timer) time.Time {
	if s.n.Load() == 0 {
		return time.Time{}
	}
	return s.until(at, at, TimerPrefix+MessageKind(t))
}

// checking reports whether a check filter of kind k holds at at.
func (s *steering) checking(at node.Addr, k string) bool {
	return s.n.Load() != 0 && !s.until(at, at, CheckPrefix+k).IsZero()
}

// Steer implements wire.OnlineServer.
func (s onlineServer) Steer(_ context.Context, req *wire.SteerRequest) (*wire.SteerResponse, error) {
	id := ClusterID(s.mc.cl.Config.Layout)
	if c := req.GetCluster(); c != "" && c != id {
		return nil, status.Errorf(codes.FailedPrecondition, "cluster: this machine is in cluster %s, not %s", id, c)
	}
	if req.GetFrom() == "" || req.GetTo() == "" || req.GetKind() == "" || req.GetDurationMs() <= 0 {
		return nil, status.Error(codes.InvalidArgument, "steer: from, to, kind and a positive duration_ms are required")
	}
	if (strings.HasPrefix(req.GetKind(), TimerPrefix) || strings.HasPrefix(req.GetKind(), CheckPrefix)) && req.GetFrom() != req.GetTo() {
		return nil, status.Error(codes.InvalidArgument, "steer: a timer or check filter names one node as from and to")
	}
	if _, _, err := ParseHold(req.GetKind()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "steer: %v", err)
	}
	if k, ok := strings.CutPrefix(req.GetKind(), CheckPrefix); ok && !slices.Contains(StepCheck.Kinds, k) {
		return nil, status.Errorf(codes.InvalidArgument, "steer: the immediate check checks %v, not %s", StepCheck.Kinds, k)
	}
	s.mc.Steer(node.Addr(req.GetFrom()), node.Addr(req.GetTo()), req.GetKind(), time.Duration(req.GetDurationMs())*time.Millisecond)
	return &wire.SteerResponse{}, nil
}
