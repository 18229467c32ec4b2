package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"
)

// benchProgram is the benchmark's own executable: amalgam-cli does not link
// the harness.
const benchProgram = "amalgam-bench"

// newBenchCmd runs amalgam-bench with the same arguments and streams, and
// exits with its status (it has already printed its one-line reason). The
// global flags go to amalgam-bench with the rest of the command line.
func newBenchCmd(*globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:                "bench <experiment>...",
		Short:              "Benchmark Amalgam against ShardedPaxos and RSPaxos (offline; runs amalgam-bench)",
		Long:               "bench runs amalgam-bench (found beside amalgam-cli, then on PATH) with the same\narguments; amalgam-cli bench --help lists its experiments and flags.\nSee docs/benchmarks.md.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			prog, err := findBench()
			if err != nil {
				for i, a := range args { // flags are amalgam-bench's; --output also sets how this error prints
					if a == "--output=json" || a == "--output" && i+1 < len(args) && args[i+1] == "json" {
						_ = cmd.Root().PersistentFlags().Set("output", "json")
					}
				}
				return err
			}
			c := exec.Command(prog, args...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
			err = c.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return &exitError{code: ee.ExitCode(), err: err, documented: true, reported: true}
			}
			return err
		},
	}
}

// findBench looks for amalgam-bench beside this executable, then on PATH.
func findBench() (string, error) {
	name := benchProgram
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(benchProgram); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found beside amalgam-cli or on PATH: install it with go install ./bench/cmd/amalgam-bench", benchProgram)
}
