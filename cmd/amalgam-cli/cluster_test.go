package main

import (
	"testing"

	"github.com/amalgam-store/amalgam/internal/clitest"
)

// TestRMWRefusesIgnoredFlags: flags an operation would ignore are refused
// before anything is sent (the cluster address here has nothing behind it).
func TestRMWRefusesIgnoredFlags(t *testing.T) {
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"--cluster", "127.0.0.1:1", "rmw", "7", "--op", "add", "--delta", "1", "--data", "x"}, "--data does not go with --op add"},
		{[]string{"--cluster", "127.0.0.1:1", "rmw", "7", "--op", "add", "--delta", "1", "--hex", "ff"}, "--hex does not go with --op add"},
		{[]string{"--cluster", "127.0.0.1:1", "rmw", "7", "--op", "xor", "--hex", "ff", "--delta", "1"}, "--delta only goes with --op add"},
	})
}
