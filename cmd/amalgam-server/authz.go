package main

import (
	"context"
	"crypto/x509"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Authorization under mutual TLS: a certificate's roles are the URI SANs
// amalgam://role/NAME it carries (client, peer, admin); one with none is a
// client. Each gRPC method names the roles that may call it; anything not
// listed is refused. See docs/security.md.

const rolePrefix = "amalgam://role/"

// methodRoles maps a full method name, or a service prefix ending in "/",
// to the roles allowed to call it.
var methodRoles = map[string][]string{
	"/amalgam.v1.Client/":                        {"client", "peer", "admin"},
	"/amalgam.v1.Transport/":                     {"peer"},
	"/amalgam.v1.Reconfig/Heartbeat":             {"peer"},
	"/amalgam.v1.Reconfig/Raft":                  {"peer"},
	"/amalgam.v1.Reconfig/Replace":               {"admin"},
	"/amalgam.v1.Reconfig/History":               {"admin", "peer"},
	"/grpc.health.v1.Health/":                    {"client", "peer", "admin"},
	"/grpc.reflection.v1.ServerReflection/":      {"client", "peer", "admin"},
	"/grpc.reflection.v1alpha.ServerReflection/": {"client", "peer", "admin"},
}

func allowedRoles(method string) []string {
	if r, ok := methodRoles[method]; ok {
		return r
	}
	if i := strings.LastIndexByte(method, '/'); i > 0 {
		return methodRoles[method[:i+1]]
	}
	return nil
}

// certRoles lists the roles of a client certificate.
func certRoles(c *x509.Certificate) []string {
	var roles []string
	for _, u := range c.URIs {
		if r, ok := strings.CutPrefix(u.String(), rolePrefix); ok && r != "" {
			roles = append(roles, r)
		}
	}
	if len(roles) == 0 {
		roles = []string{"client"}
	}
	return roles
}

// authorize checks the caller's certificate against the method's roles.
func authorize(ctx context.Context, method string) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return status.Error(codes.PermissionDenied, "no peer information")
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return status.Errorf(codes.PermissionDenied, "%s needs a verified client certificate", method)
	}
	cert := ti.State.VerifiedChains[0][0]
	have := certRoles(cert)
	want := allowedRoles(method)
	for _, r := range have {
		if slices.Contains(want, r) {
			return nil
		}
	}
	if len(want) == 0 {
		return status.Errorf(codes.PermissionDenied, "%s is not open to any certificate role", method)
	}
	return status.Errorf(codes.PermissionDenied, "%s needs a certificate with role %s (URI SAN %s%s); certificate %q has role %s",
		method, strings.Join(want, " or "), rolePrefix, want[0], cert.Subject.CommonName, strings.Join(have, ", "))
}

func authzUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func authzStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}
