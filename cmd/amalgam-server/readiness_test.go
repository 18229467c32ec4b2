package main

import (
	"strings"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
)

// TestReadinessReasons: a machine is ready when its servers answer, have
// every block and fence nobody; a rebuilding server, a missing one, or one
// stopped for a replacement (it has fenced a peer until the next
// configuration) makes it NOT_SERVING, naming the server.
func TestReadinessReasons(t *testing.T) {
	ok := []runtime.NodeStat{{Addr: msg.DataAddr(1)}, {Addr: msg.ParityAddr(1)}}
	if why := statsNotReady(1, ok); why != "" {
		t.Fatalf("healthy machine: %q", why)
	}
	if why := statsNotReady(1, ok[:1]); !strings.Contains(why, "machine 1: a server did not answer") {
		t.Errorf("a server missing: %q", why)
	}
	fenced := []runtime.NodeStat{ok[0], {Addr: msg.ParityAddr(1), Fenced: []node.Addr{msg.DataAddr(3)}}}
	why := statsNotReady(1, fenced)
	if !strings.Contains(why, "parity/1 is stopped for a replacement") || !strings.Contains(why, "data/3") {
		t.Errorf("parity/1 fencing data/3: %q", why)
	}
	r := &readiness{}
	r.set(why)
	if r.status() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("fenced: %v, want NOT_SERVING", r.status())
	}
	r.set(statsNotReady(1, ok))
	if r.status() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("after the next configuration: %v, want SERVING", r.status())
	}
	rebuilding := []runtime.NodeStat{{Addr: msg.DataAddr(1), DegradedBlocks: 4}, ok[1]}
	if why := statsNotReady(1, rebuilding); !strings.Contains(why, "data/1 is rebuilding (4 blocks left)") {
		t.Errorf("rebuilding: %q", why)
	}
}
