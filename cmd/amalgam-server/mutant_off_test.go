//go:build !mutants

package main

import (
	"testing"

	"github.com/amalgam-store/amalgam/internal/clitest"
)

// Without the mutants tag, --mutant is refused in one line before
// anything starts, whatever the name.
func TestMutantNeedsTag(t *testing.T) {
	const want = "--mutant needs a binary built with -tags mutants"
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"dev", "--durability", "memory", "--addr", "127.0.0.1:0", "--mutant", "commit-out-of-order"}, "dev: " + want},
		{[]string{"dev", "--durability", "memory", "--addr", "127.0.0.1:0", "--mutant", "no-such"}, want},
		{[]string{"node", "--machine", "0", "--data-dir", t.TempDir(), "--mutant", "commit-f-1"}, "node: " + want},
		{[]string{"reconfig", "--machine-addrs", "a:1,b:2,c:3,d:4,e:5", "--data-dir", t.TempDir(), "--mutant", "commit-f-1"}, "reconfig: " + want},
	})
}
