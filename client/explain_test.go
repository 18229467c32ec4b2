package client

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCheckAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:7400": "",
		"127.0.0.1":      "has no port",
		"localhost":      "has no port",
		":7400":          "needs both a host and a port",
		"[::1]:":         "needs both a host and a port",
	} {
		err := checkAddr(addr)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%q: %v, want %q", addr, err, want)
		}
	}
}

// TestCause maps what gRPC reports for a failed connection to its cause;
// answers from a server are not connection failures.
func TestCause(t *testing.T) {
	for _, tc := range []struct {
		err        error
		cause      string
		definitive bool
	}{
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), "nothing is listening", false},
		{status.Error(codes.DeadlineExceeded, `latest balancer error: connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), "nothing is listening", false},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`), "TLS: the server's certificate is signed by an authority not in --tls-ca", true},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate is valid for 192.0.2.1, not 127.0.0.1"`), "name mismatch", true},
		{status.Error(codes.Unavailable, `connection error: desc = "error reading server preface: remote error: tls: certificate required"`), "requires a client certificate", true},
		{status.Error(codes.Unavailable, `connection error: desc = "error reading server preface: http2: frame too large"`), "not a gRPC server", true},
		{status.Error(codes.Unavailable, `connection error: desc = "error reading server preface: connection reset by peer"`), "may require TLS", false},
		{status.Error(codes.Unavailable, "no node data/1 here"), "", false},
		{status.Error(codes.InvalidArgument, "connection refused"), "", false},
		{errors.New("dial tcp: lookup nowhere.invalid: no such host"), "does not resolve", false},
	} {
		got := Cause(tc.err)
		if tc.cause == "" && got != "" || !strings.Contains(got, tc.cause) {
			t.Errorf("Cause(%v) = %q, want %q", tc.err, got, tc.cause)
		}
		if status.Code(tc.err) == codes.Unavailable && definitive(tc.err) != tc.definitive {
			t.Errorf("definitive(%v) = %v", tc.err, !tc.definitive)
		}
	}
}
