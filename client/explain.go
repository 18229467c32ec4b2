package client

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// checkAddr refuses an entry address that gRPC would quietly complete
// (a host without a port is dialed on port 443).
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil && strings.Contains(err.Error(), "missing port"):
		return fmt.Errorf("address %q has no port (want HOST:PORT, for example 127.0.0.1:7400)", addr)
	case err != nil:
		return fmt.Errorf("address %q is not HOST:PORT: %v", addr, err)
	case host == "" || port == "":
		return fmt.Errorf("address %q needs both a host and a port (HOST:PORT)", addr)
	}
	return nil
}

const closedBeforeGRPC = "the server closed the connection before speaking gRPC: it may require TLS (give --tls-ca, --tls-cert and --tls-key) or not be a gRPC server"

// causes map what gRPC and crypto/tls say about a failed connection to the
// cause an operator can act on. The first match wins.
var causes = []struct{ raw, cause string }{
	{"connection refused", "nothing is listening there (connection refused)"},
	{"no such host", "the host name does not resolve"},
	{"network is unreachable", "the network is unreachable"},
	{"i/o timeout", "the address does not answer (connection timed out)"},
	{"signed by unknown authority", "TLS: the server's certificate is signed by an authority not in --tls-ca (unknown authority)"},
	{"certificate is valid for", "TLS: the server's certificate does not name the address dialed (name mismatch)"},
	{"doesn't contain any IP SANs", "TLS: the server's certificate does not name the address dialed (name mismatch: no IP SAN)"},
	{"not valid for any names", "TLS: the server's certificate does not name the address dialed (name mismatch)"},
	{"certificate required", "TLS: the server requires a client certificate (give --tls-cert and --tls-key)"},
	{"unknown certificate authority", "TLS: the server does not trust our client certificate (signed by another CA)"},
	{"bad certificate", "TLS: the server refused our client certificate"},
	{"first record does not look like a TLS handshake", "TLS: the server does not speak TLS (drop --tls-ca, or check the port)"},
	{"http2: frame too large", "not a gRPC server (it answered in HTTP/1; a metrics port?)"},
	{"HTTP/1", "not a gRPC server (it answered in HTTP/1; a metrics port?)"},
	{"error reading server preface: EOF", closedBeforeGRPC},
	// A TLS server that closes on our plaintext preface may reset the
	// connection instead of closing it, depending on what it had read (1 in 20 here).
	{"error reading server preface: connection reset by peer", closedBeforeGRPC},
	{"server preface", "not a gRPC server, or it refused the connection"},
	{"connection reset by peer", "the server reset the connection (TLS required, or our certificate refused?)"},
}

// Cause names why a call to addr failed, in one line, or "" when err is
// not a connection failure.
func Cause(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if s, ok := status.FromError(err); ok {
		if s.Code() != codes.Unavailable && s.Code() != codes.DeadlineExceeded {
			return ""
		}
		msg = s.Message()
	}
	for _, c := range causes {
		if strings.Contains(msg, c.raw) {
			return c.cause
		}
	}
	return ""
}

// definitive reports whether a connection failure will not go away by
// retrying (a TLS verification failure, a peer that is not gRPC), as
// against a server that may still be starting.
func definitive(err error) bool {
	c := Cause(err)
	return strings.HasPrefix(c, "TLS: ") || strings.HasPrefix(c, "not a gRPC server") ||
		c == "the host name does not resolve"
}

// ErrUnreachable marks a cluster the client could not connect to within
// its dial timeout.
var ErrUnreachable = errors.New("cluster unreachable")

// connFailure reports whether err says the connection itself failed (as
// against an answer from the server).
func connFailure(err error) bool {
	if status.Code(err) != codes.Unavailable {
		return false
	}
	m := status.Convert(err).Message()
	return Cause(err) != "" || strings.Contains(m, "connection error") || strings.Contains(m, "transport:")
}

// retryable reports whether another attempt at the same entry may succeed.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return true
	case codes.Unavailable:
		return !definitive(err)
	}
	return false
}

// allFailed reports whether every entry has failed to connect: for good,
// or for longer than the dial timeout.
func allFailed(lastErr []error, dialBy time.Time) bool {
	for _, err := range lastErr {
		if err == nil || !connFailure(err) || !definitive(err) && time.Now().Before(dialBy) {
			return false
		}
	}
	return true
}

// unreachable names, for each entry, why it could not be connected to, or
// returns "" if any entry was reached.
func unreachable(entries []string, lastErr []error) string {
	var why []string
	for i, err := range lastErr {
		if err == nil || !connFailure(err) {
			return ""
		}
		c := Cause(err)
		if c == "" {
			c = strings.Join(strings.Fields(status.Convert(err).Message()), " ")
		}
		why = append(why, entries[i]+": "+c)
	}
	return strings.Join(why, "; ")
}
