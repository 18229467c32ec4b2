package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/amalgam-store/amalgam/runtime"
)

// readiness keeps the gRPC health service (grpc.health.v1, service "")
// of every server this process runs in step with its machines: SERVING
// when each hosted server answers and has every block, NOT_SERVING while
// one rebuilds or does not answer (wedged).
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
		stats := m.NodeStats(ctx)
		if len(stats) < 2 {
			return fmt.Sprintf("machine %d: a server did not answer", m.Slot())
		}
		for _, s := range stats {
			if s.DegradedBlocks > 0 {
				return fmt.Sprintf("%s is rebuilding (%d blocks left)", s.Addr, s.DegradedBlocks)
			}
		}
	}
	return ""
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
