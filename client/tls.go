package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// TLS returns the dial option for a cluster that runs mutual TLS: the
// client verifies servers against the CA bundle in caFile and presents the
// certificate in certFile (with its key in keyFile). certFile and keyFile
// go together; without them the client presents no certificate, which a
// server requiring mutual TLS refuses.
func TLS(certFile, keyFile, caFile string) (grpc.DialOption, error) {
	if caFile == "" {
		return nil, errors.New("--tls-ca is needed with --tls-cert and --tls-key")
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key must be given together")
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca: no certificates in %s", caFile)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		// Always present the certificate and let the server judge it
		// (by default Go sends none unless it chains to a CA the server
		// names, which hides why a connection was refused).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(cfg)), nil
}
