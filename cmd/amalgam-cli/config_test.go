package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/internal/clitest"
)

// writeConfig writes a --config file.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cli.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigFile: the global flags come from --config (or
// AMALGAM_CLI_CONFIG), with flags > AMALGAM_* environment > file >
// defaults; an unknown key or a bad value is a one-line error naming it.
func TestConfigFile(t *testing.T) {
	for _, k := range []string{"AMALGAM_OUTPUT", "AMALGAM_CLUSTER", "AMALGAM_TIMEOUT", "AMALGAM_DIAL_TIMEOUT", "AMALGAM_CLI_CONFIG"} {
		if _, ok := os.LookupEnv(k); ok {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	isJSON := func(out string) bool { return json.Valid([]byte(out)) }

	f := writeConfig(t, "output: json\n")
	if out, err := run(t, "--config", f, "version"); err != nil || !isJSON(out) {
		t.Fatalf("file output: json: %v, %q", err, out)
	}
	if out, err := run(t, "--config", f, "--output", "text", "version"); err != nil || isJSON(out) || !strings.HasPrefix(out, "amalgam-cli ") {
		t.Fatalf("flag --output text over the file: %v, %q", err, out)
	}
	t.Setenv("AMALGAM_OUTPUT", "text")
	if out, err := run(t, "--config", f, "version"); err != nil || isJSON(out) {
		t.Fatalf("AMALGAM_OUTPUT=text over the file: %v, %q", err, out)
	}
	os.Unsetenv("AMALGAM_OUTPUT")
	t.Setenv("AMALGAM_CLI_CONFIG", f)
	if out, err := run(t, "version"); err != nil || !isJSON(out) {
		t.Fatalf("AMALGAM_CLI_CONFIG: %v, %q", err, out)
	}
	os.Unsetenv("AMALGAM_CLI_CONFIG")

	// cluster and dial-timeout reach the connection: nothing listens on a
	// port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f = writeConfig(t, fmt.Sprintf("cluster: %s\ndial-timeout: 1s\ntimeout: 5s\n", addr))
	if _, err := run(t, "--config", f, "health"); err == nil || !strings.Contains(err.Error(), addr) ||
		!strings.Contains(err.Error(), "nothing is listening") {
		t.Fatalf("cluster from the file: %v", err)
	}

	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"--config", writeConfig(t, "timeout: 0s\n"), "version"}, "--timeout must be positive"},
		{[]string{"--config", writeConfig(t, "dial-timeout: soon\n"), "version"}, `bad value "soon" for --dial-timeout`},
		{[]string{"--config", writeConfig(t, "data-dir: /tmp\n"), "version"}, `unknown key "data-dir" (amalgam-cli has no --data-dir flag)`},
		// A subcommand's flag is not a global one (refused before connecting).
		{[]string{"--config", writeConfig(t, "length: 8\n"), "--cluster", addr, "read", "7"}, `unknown key "length"`},
		{[]string{"--config", writeConfig(t, "- a list\n"), "version"}, "not a YAML mapping"},
	})
	if _, err := run(t, "--config", filepath.Join(t.TempDir(), "missing.yaml"), "version"); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing --config file: %v", err)
	}
}
