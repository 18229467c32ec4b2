// Package clitest runs the module's cobra commands in-process for their
// tests. Only tests import it.
package clitest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Run executes root with args and returns what it wrote to its output and
// error streams, together, and the error it returned.
func Run(root *cobra.Command, args ...string) (string, error) {
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// RunSplit is Run with the output and error streams apart.
func RunSplit(root *cobra.Command, args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}

// Refusal is a command line that must fail, and a part of its error. It
// is an alias of an unnamed struct so that tables may list its fields
// without their names.
type Refusal = struct {
	Args []string
	Want string
}

// Refuses runs each command line on a new root command and fails the test
// unless it fails with a one-line error containing Want.
func Refuses(t testing.TB, newRoot func() *cobra.Command, cases []Refusal) {
	t.Helper()
	for _, tc := range cases {
		_, err := Run(newRoot(), tc.Args...)
		if err == nil || !strings.Contains(err.Error(), tc.Want) {
			t.Errorf("%v: err = %v, want it to mention %q", tc.Args, err, tc.Want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error spans several lines: %q", tc.Args, err)
		}
	}
}
