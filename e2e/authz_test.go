package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/wire"
)

// TestAuthorization runs a dev cluster with mutual TLS and checks the
// certificate roles: a client certificate reaches the client API but is
// refused, with PermissionDenied naming the role needed, on Transport
// (unary and streaming), Raft and Replace; Replace needs the admin role,
// which an admin certificate has.
func TestAuthorization(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir, "amalgam test CA")
	srvCert, srvKey := ca.issue(t, dir, "server", true)
	cliCert, cliKey := ca.issue(t, dir, "client", false)
	admCert, admKey := ca.issue(t, dir, "admin", false, "admin")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6))
	startDev(t, addr, filepath.Join(dir, "data"), "--durability", "memory",
		"--tls-cert", srvCert, "--tls-key", srvKey, "--tls-ca", ca.file)
	machine := fmt.Sprintf("127.0.0.1:%d", mustPort(t, addr)+1)

	creds, err := client.TLS(cliCert, cliKey, ca.file)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(a string) *grpc.ClientConn {
		cc, err := grpc.NewClient(a, creds)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		return cc
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2etest.SafetyStop)
	defer cancel()
	refused := func(what string, err error, role string) {
		t.Helper()
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "needs a certificate with role "+role) {
			t.Errorf("%s with a client certificate: got %v, want PermissionDenied naming role %s", what, err, role)
		} else {
			t.Logf("%s: %s", what, status.Convert(err).Message())
		}
	}
	// The client API works.
	if _, err := wire.NewClientClient(dial(machine)).Status(ctx, &wire.StatusRequest{}); err != nil {
		t.Fatalf("client API with a client certificate: %v", err)
	}
	_, err = wire.NewTransportClient(dial(machine)).Send(ctx, &wire.SendRequest{})
	refused("Transport/Send", err, "peer")
	ss, err := wire.NewTransportClient(dial(machine)).SendStream(ctx)
	if err == nil {
		_, err = ss.CloseAndRecv()
	}
	refused("Transport/SendStream", err, "peer")
	st, err := wire.NewTransportClient(dial(machine)).Stream(ctx)
	if err == nil {
		_, err = st.Recv()
	}
	refused("Transport/Stream", err, "peer")
	_, err = wire.NewReconfigClient(dial(addr)).Raft(ctx, &wire.RaftMessages{})
	refused("Reconfig/Raft", err, "peer")
	_, err = wire.NewReconfigClient(dial(addr)).Replace(ctx, &wire.AdminReplaceRequest{Server: "machine/1"})
	refused("Reconfig/Replace", err, "admin")

	// Through amalgam-cli: a one-line refusal; an admin certificate gets
	// past authorization (and the bad server name is then refused).
	_, errOut, err := cliRaw(addr, "--tls-cert", cliCert, "--tls-key", cliKey, "--tls-ca", ca.file, "admin", "replace", "data/99")
	if err == nil || !strings.Contains(errOut, "needs a certificate with role admin") {
		t.Errorf("admin replace with a client certificate: %v %q", err, errOut)
	}
	_, errOut, err = cliRaw(addr, "--tls-cert", admCert, "--tls-key", admKey, "--tls-ca", ca.file, "admin", "replace", "data/99")
	if err == nil || strings.Contains(errOut, "needs a certificate") {
		t.Errorf("admin replace data/99 with an admin certificate: %v %q, want refused for the name only", err, errOut)
	}
}

func mustPort(t *testing.T, addr string) int {
	t.Helper()
	var p int
	if _, err := fmt.Sscanf(addr[strings.LastIndexByte(addr, ':')+1:], "%d", &p); err != nil {
		t.Fatal(err)
	}
	return p
}
