package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// errorJSON is what a failed command prints on stdout under --output json
// (the one-line reason still goes to stderr).
type errorJSON struct {
	Error string `json:"error"`
}

// exitError carries an exit status other than 1 (2 for an unhealthy
// cluster) with the line to print; documented means stdout already holds
// the command's document, so no JSON error follows it.
type exitError struct {
	code       int
	err        error
	documented bool
	reported   bool // the line is printed already (by amalgam-bench)
}

// exitUnhealthy is the status of status and health on an unhealthy cluster.
const exitUnhealthy = 2

func unhealthy(problems []string) error {
	why := strings.Join(problems, "; ")
	if why == "" {
		why = "see status"
	}
	return &exitError{code: exitUnhealthy, err: fmt.Errorf("cluster not healthy: %s", why), documented: true}
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func reportError(root *cobra.Command, err error) {
	var ee *exitError
	if errors.As(err, &ee) && ee.reported {
		return
	}
	line := oneLine(err).Error()
	fmt.Fprintf(os.Stderr, "amalgam-cli: %s\n", line)
	if errors.As(err, &ee) && ee.documented {
		return
	}
	if f := root.PersistentFlags().Lookup("output"); f != nil && f.Value.String() == "json" {
		_ = writeJSON(root.OutOrStdout(), errorJSON{Error: line})
	}
}

// oneLine keeps errors on one line, as scripts expect.
func oneLine(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.Join(strings.Fields(err.Error()), " "))
}
