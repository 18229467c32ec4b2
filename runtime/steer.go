package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Execution steering: event filters that drop some unordered messages
// for a while (docs/model-checking.md, "Online checking"). Only
// unordered messages are filtered: the protocol tolerates their loss,
// while a stream's messages are delivered exactly once.

// steerFilter drops the messages of kind from one node to another until
// a deadline.
type steerFilter struct {
	from, to node.Addr
	kind     string
	until    time.Time
}

// steering is a host's filters; n counts them, so that a host without
// any pays one atomic load per message.
type steering struct {
	n  atomic.Int64
	mu sync.Mutex
	fs []steerFilter
}

// MessageKind is the name filters match a message by: its type's name
// without the package ("SnapshotData").
func MessageKind(m node.Message) string {
	t := fmt.Sprintf("%T", m)
	return t[strings.LastIndexByte(t, '.')+1:]
}

// Steer drops the unordered messages of kind that from sends to to, for d.
func (h *Host) Steer(from, to node.Addr, kind string, d time.Duration) {
	s := &h.steer
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fs = append(s.fs, steerFilter{from, to, kind, time.Now().Add(d)})
	s.n.Store(int64(len(s.fs)))
	h.log.Info("event filter installed", "from", from, "to", to, "kind", kind, "for", d)
}

// drops reports whether a filter drops m, forgetting expired filters.
func (s *steering) drops(from, to node.Addr, m node.Message) bool {
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	live := s.fs[:0]
	drop := false
	for _, f := range s.fs {
		if now.After(f.until) {
			continue
		}
		live = append(live, f)
		drop = drop || (f.from == from && f.to == to && f.kind == MessageKind(m))
	}
	s.fs = live
	s.n.Store(int64(len(live)))
	return drop
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
	s.mc.Steer(node.Addr(req.GetFrom()), node.Addr(req.GetTo()), req.GetKind(), time.Duration(req.GetDurationMs())*time.Millisecond)
	return &wire.SteerResponse{}, nil
}
