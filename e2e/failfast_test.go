package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

// tlsServer serves gRPC (no services: the handshake is what is tested) on
// a loopback port with certFile, requiring client certificates from caFile.
func tlsServer(t *testing.T, certFile, keyFile, caFile string) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	return serveGRPC(t, grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg))))
}

func serveGRPC(t *testing.T, s *grpc.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

// TestFailFast points amalgam-cli at endpoints it cannot use. Each attempt
// must fail well inside the request timeout (10s) with one line naming
// the cause, on stderr and in JSON on stdout.
func TestFailFast(t *testing.T) {
	p := newPKI(t)
	dir, ca, other, srvCert, srvKey, cliCert, cliKey := p.dir, p.ca, p.other, p.srvCert, p.srvKey, p.cliCert, p.cliKey
	wrongName, wrongNameKey := ca.issueWith(t, dir, "elsewhere", func(c *x509.Certificate) {
		c.ExtKeyUsage = append(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		c.IPAddresses = []net.IP{net.ParseIP("192.0.2.1")}
	})
	tlsAddr := tlsServer(t, srvCert, srvKey, ca.file)
	mismatchAddr := tlsServer(t, wrongName, wrongNameKey, ca.file)

	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	go func() { _ = hs.Serve(metrics) }()
	t.Cleanup(func() { _ = hs.Close() })

	good := []string{"--tls-cert", cliCert, "--tls-key", cliKey}
	cases := []struct {
		name, addr string
		flags      []string
		cause      string
	}{
		{"nothing listening", fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 0)), nil, "nothing is listening there (connection refused)"},
		{"host without a port", "127.0.0.1", nil, "has no port"},
		{"an HTTP (metrics) port", metrics.Addr().String(), nil, "not a gRPC server"},
		{"TLS server, no TLS", tlsAddr, nil, "may require TLS"},
		{"no client certificate", tlsAddr, []string{"--tls-ca", ca.file}, "TLS: the server requires a client certificate"},
		{"unknown authority", tlsAddr, append(good, "--tls-ca", other.file), "TLS: the server's certificate is signed by an authority not in --tls-ca"},
		{"name mismatch", mismatchAddr, append(good, "--tls-ca", ca.file), "TLS: the server's certificate does not name the address dialed"},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			// The dial timeout (1 s), not the request timeout (an hour),
			// must end the wait: one still running at the safety stop
			// waits for the request timeout.
			ctx, cancel := context.WithTimeout(context.Background(), e2etest.SafetyStop)
			defer cancel()
			run := func(args ...string) (string, string, error) {
				start := time.Now()
				out, errOut, err := cliRawCtx(ctx, tc.addr, append(append(tc.flags, "--timeout", "1h", "--dial-timeout", "1s"), args...)...)
				if ctx.Err() != nil {
					t.Fatalf("amalgam-cli %s still running after %v: the dial timeout did not end the wait", args[0], e2etest.SafetyStop)
				}
				t.Logf("%s failed after %v", args[0], time.Since(start).Round(time.Millisecond))
				return out, errOut, err
			}
			out, errOut, err := run("status")
			if err == nil {
				t.Fatalf("status succeeded: %s", out)
			}
			line := strings.TrimSpace(errOut)
			if strings.Contains(line, "\n") || !strings.HasPrefix(line, "amalgam-cli: ") || !strings.Contains(line, tc.cause) {
				t.Fatalf("stderr %q: want one line naming %q", errOut, tc.cause)
			}
			var doc struct{ Error string }
			if err := json.Unmarshal([]byte(out), &doc); err != nil || !strings.Contains(doc.Error, tc.cause) {
				t.Fatalf("stdout %q: want JSON with an error naming %q (%v)", out, tc.cause, err)
			}
			t.Log(line)

			// export (and import) connect the same way.
			_, errOut, err = run("export", "--blocks", "0-1", "-o", filepath.Join(dir, "out.img"))
			if line := strings.TrimSpace(errOut); err == nil || strings.Contains(line, "\n") || !strings.Contains(line, tc.cause) {
				t.Fatalf("export: %v, stderr %q: want one line naming %q", err, errOut, tc.cause)
			}
		})
	}
}
