package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

// TestReadiness: a machine's gRPC health is SERVING on a healthy cluster,
// NOT_SERVING while a replaced server rebuilds (throttled to 2 blocks/s,
// so it takes seconds), and SERVING again once it has rebuilt.
func TestReadiness(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6))
	startDev(t, addr, filepath.Join(t.TempDir(), "data"), "--durability", "memory", "--rebuild-rate", "2")
	machine := fmt.Sprintf("127.0.0.1:%d", mustPort(t, addr)+2) // machine 1
	cc, err := grpc.NewClient(machine, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	// waitStatus polls until the health status is want; the deadline
	// only guards against a hang.
	waitStatus := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		guard := time.Now().Add(2 * time.Minute)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err == nil && r.GetStatus() == want {
				return
			}
			if time.Now().After(guard) {
				t.Fatalf("health never became %v (last %v, %v)", want, r.GetStatus(), err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitStatus(healthpb.HealthCheckResponse_SERVING)
	var out struct{}
	cli(t, addr, &out, "admin", "replace", "data/1")
	waitStatus(healthpb.HealthCheckResponse_NOT_SERVING)
	waitStatus(healthpb.HealthCheckResponse_SERVING)
}
