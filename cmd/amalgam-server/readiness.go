package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
)

// readiness keeps the gRPC health service (grpc.health.v1, service "")
// of every server this process runs in step with its machines: SERVING
// when each hosted server answers and has every block, NOT_SERVING while
// one rebuilds, does not answer (wedged), or is stopped for a replacement
// (it has fenced a peer being replaced and waits for the next
// configuration).
type readiness struct {
	mu      sync.Mutex
	servers []*health.Server
	reason  string // why not serving; "" when serving
}

func (r *readiness) add(hs *health.Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.servers = append(r.servers, hs)
	hs.SetServingStatus("", r.status())
}

func (r *readiness) status() healthpb.HealthCheckResponse_ServingStatus {
	if r.reason != "" {
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	return healthpb.HealthCheckResponse_SERVING
}

func (r *readiness) set(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reason = reason
	for _, hs := range r.servers {
		hs.SetServingStatus("", r.status())
	}
}

// notReady says why the machines are not ready, or "".
func notReady(ctx context.Context, ms []*runtime.Machine) string {
	for _, m := range ms {
		if m == nil || m.Slot() < 0 {
			continue // a spare waiting for a slot is ready to take one
		}
		if why := statsNotReady(m.Slot(), m.NodeStats(ctx)); why != "" {
			return why
		}
	}
	return ""
}

// statsNotReady says why machine slot, whose servers answered with stats,
// is not ready, or "".
func statsNotReady(slot int, stats []runtime.NodeStat) string {
	if len(stats) < 2 {
		return fmt.Sprintf("machine %d: a server did not answer", slot)
	}
	for _, s := range stats {
		if s.DegradedBlocks > 0 {
			return fmt.Sprintf("%s is rebuilding (%d blocks left)", s.Addr, s.DegradedBlocks)
		}
		if len(s.Fenced) > 0 {
			return fmt.Sprintf("%s is stopped for a replacement: it has fenced %s until the next configuration", s.Addr, joinAddrs(s.Fenced))
		}
	}
	return ""
}

func joinAddrs(as []node.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// track re-evaluates readiness every interval until ctx ends.
func (r *readiness) track(ctx context.Context, every time.Duration, ms ...*runtime.Machine) {
	update := func() {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if why := notReady(ictx, ms); ctx.Err() == nil {
			r.set(why)
		}
	}
	update()
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				update()
			}
		}
	}()
}
