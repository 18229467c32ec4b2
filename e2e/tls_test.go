package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/wire"
)

// testCA is a certificate authority made up for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // PEM of cert
}

var serial int64

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sign makes a key and a certificate for name from tmpl, valid for a day
// around now, signed by parent, or by itself when parent is nil.
func sign(t *testing.T, name string, tmpl *x509.Certificate, parent *testCA) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	serial++
	key := newKey(t)
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.Subject = pkix.Name{CommonName: name}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

func newCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	der, key := sign(t, name, &x509.Certificate{IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".pem")}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue writes name.pem and name-key.pem signed by the CA and returns
// their paths. A server certificate is valid for 127.0.0.1, has the peer
// role and serves both ends, since servers also dial each other; any other
// certificate has the roles given (none: a client).
func (ca *testCA) issue(t *testing.T, dir, name string, server bool, roles ...string) (certFile, keyFile string) {
	t.Helper()
	return ca.issueWith(t, dir, name, func(c *x509.Certificate) {
		if server {
			c.ExtKeyUsage = append(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
			c.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			c.DNSNames = []string{"localhost"}
			roles = append(roles, "peer")
		}
		for _, r := range roles {
			c.URIs = append(c.URIs, &url.URL{Scheme: "amalgam", Host: "role", Path: "/" + r})
		}
	})
}

// issueWith is issue for a client certificate that mod changes first.
func (ca *testCA) issueWith(t *testing.T, dir, name string, mod func(*x509.Certificate)) (certFile, keyFile string) {
	t.Helper()
	tmpl := &x509.Certificate{KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	mod(tmpl)
	der, key := sign(t, name, tmpl, ca)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", kder)
	return certFile, keyFile
}

// pki is a test's certificates: the cluster's CA and another, and a
// server and a client certificate from the cluster's CA, in dir.
type pki struct {
	dir             string
	ca, other       *testCA
	srvCert, srvKey string
	cliCert, cliKey string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	p.ca = newCA(t, p.dir, "amalgam test CA")
	p.other = newCA(t, p.dir, "other CA")
	p.srvCert, p.srvKey = p.ca.issue(t, p.dir, "server", true)
	p.cliCert, p.cliKey = p.ca.issue(t, p.dir, "client", false)
	return p
}

// TestTLS runs a dev cluster with mutual TLS. A client with a certificate
// from the cluster's CA works; a client with no TLS, with TLS but no
// certificate, or with a certificate from another CA is refused, by the
// entry address and by every machine, and applies nothing.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	dir, ca, other, srvCert, srvKey, cliCert, cliKey := p.dir, p.ca, p.other, p.srvCert, p.srvKey, p.cliCert, p.cliKey
	rogueCert, rogueKey := other.issue(t, dir, "rogue", false)

	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t, 6))
	s := startDev(t, addr, filepath.Join(dir, "data"), "--durability", "memory",
		"--tls-cert", srvCert, "--tls-key", srvKey, "--tls-ca", ca.file)

	good := []string{"--tls-cert", cliCert, "--tls-key", cliKey, "--tls-ca", ca.file}
	var st struct {
		Machines []struct{ Addr string } `json:"machines"`
		Nodes    []struct{ Addr string } `json:"nodes"`
	}
	cli(t, addr, &st, append(good, "status")...)
	if len(st.Machines) != 5 || len(st.Nodes) != 10 {
		t.Fatalf("status over TLS: %+v", st)
	}
	var r txn
	// A write commits only once parity servers acknowledge it: the
	// machines talk to each other over mutual TLS too.
	cli(t, addr, &r, append(good, "write", "5", "--data", "secret")...)
	want := hex.EncodeToString([]byte("secret"))
	cli(t, addr, &r, append(good, "read", "5", "--length", "6")...)
	if len(r.Results) != 1 || r.Results[0].DataHex == nil || *r.Results[0].DataHex != want {
		t.Fatalf("read over TLS: %+v", r)
	}

	// Refused clients, with the reason a client must print when it is the
	// one refusing. (When the server refuses a client certificate, with
	// TLS 1.3 the client may see its alert, "certificate required" or
	// "unknown certificate authority", or only a reset connection.)
	refused := []struct {
		name  string
		flags []string
		why   string
	}{
		{"no TLS", nil, ""},
		{"TLS without a client certificate", []string{"--tls-ca", ca.file}, ""},
		{"a certificate from another CA", []string{"--tls-cert", rogueCert, "--tls-key", rogueKey, "--tls-ca", ca.file}, ""},
		{"a valid certificate, distrusting the servers", []string{"--tls-cert", cliCert, "--tls-key", cliKey, "--tls-ca", other.file}, "TLS: the server's certificate is signed by an authority not in --tls-ca"},
	}
	var wg sync.WaitGroup
	for _, tc := range refused {
		wg.Go(func() {
			out, errOut, err := cliRaw(addr, append(tc.flags, "--timeout", "2s", "write", "5", "--data", "forged")...)
			switch {
			case err == nil:
				t.Errorf("%s: write succeeded: %s", tc.name, out)
			case strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.HasPrefix(errOut, "amalgam-cli: "):
				t.Errorf("%s: error is not one line: %q", tc.name, errOut)
			case !strings.Contains(errOut, tc.why):
				t.Errorf("%s: error does not say %q: %s", tc.name, tc.why, errOut)
			default:
				t.Logf("%s: refused: %s", tc.name, strings.TrimSpace(errOut))
			}
		})
	}
	wg.Wait()

	// Every machine refuses too, not only the entry address.
	noCert, err := client.TLS("", "", ca.file)
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := client.TLS(rogueCert, rogueKey, ca.file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Machines {
		for name, opt := range map[string]grpc.DialOption{"no TLS": grpc.WithTransportCredentials(insecure.NewCredentials()),
			"no certificate": noCert, "another CA": rogue} {
			cc, err := grpc.NewClient(m.Addr, opt)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = wire.NewClientClient(cc).Execute(ctx, &wire.ExecuteRequest{ClientId: 99, Seq: 1,
				Ops: []*wire.Op{{Kind: wire.OpKind_OP_KIND_WRITE, Block: 5, Data: []byte("forged")}}})
			cancel()
			_ = cc.Close()
			if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded {
				t.Errorf("machine %s, %s: got %v, want the connection refused", m.Addr, name, err)
			}
		}
	}

	// Nothing the refused clients sent was applied.
	cli(t, addr, &r, append(good, "read", "5", "--length", "6")...)
	if *r.Results[0].DataHex != want {
		t.Fatalf("block 5 changed by a refused client: %s", *r.Results[0].DataHex)
	}
	interrupt(t, s)
}
