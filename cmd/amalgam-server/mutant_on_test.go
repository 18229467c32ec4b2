//go:build mutants

package main

import (
	"testing"

	"github.com/amalgam-store/amalgam/internal/clitest"
)

// With the mutants tag, --mutant takes the names of the mutant table that
// live in protocol code, and refuses others in one line that lists them.
func TestMutantNames(t *testing.T) {
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"dev", "--durability", "memory", "--addr", "127.0.0.1:0", "--mutant", "no-such"},
			`dev: --mutant "no-such" is not one the server runs (persistence mutants exist in the checker's restarts only); valid: commit-f-1, commit-out-of-order, txn-first-stripe,`},
		{[]string{"dev", "--durability", "memory", "--addr", "127.0.0.1:0", "--mutant", "data-no-blocks"}, `--mutant "data-no-blocks" is not one the server runs`},
		{[]string{"dev", "--protocol", "rspaxos", "--durability", "memory", "--mutant", "commit-f-1"}, "--mutant runs with --protocol amalgam only"},
	})
}
