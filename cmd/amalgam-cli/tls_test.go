package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/amalgam-store/amalgam/internal/clitest"
)

func TestTLSFlagErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "status"}, "--tls-ca is needed"},
		{[]string{"--tls-ca", filepath.Join(dir, "missing.pem"), "status"}, "--tls-ca: open"},
		{[]string{"--tls-ca", empty, "status"}, "--tls-ca: no certificates in"},
		{[]string{"--tls-ca", empty, "--tls-cert", "c.pem", "read", "1"}, "--tls-cert and --tls-key must be given together"},
	})
}

func TestTLSFromEnv(t *testing.T) {
	t.Setenv("AMALGAM_TLS_CERT", "/c.pem")
	t.Setenv("AMALGAM_TLS_KEY", "/k.pem")
	t.Setenv("AMALGAM_TLS_CA", "/ca.pem")
	f := newRootCmd().PersistentFlags()
	for flag, want := range map[string]string{"tls-cert": "/c.pem", "tls-key": "/k.pem", "tls-ca": "/ca.pem"} {
		if got := f.Lookup(flag).DefValue; got != want {
			t.Errorf("--%s default = %q, want %q", flag, got, want)
		}
	}
}
