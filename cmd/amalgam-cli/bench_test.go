package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/internal/clitest"
)

// fakeBench puts an amalgam-bench on PATH that prints its arguments and
// exits with status code.
func fakeBench(t *testing.T, code string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake amalgam-bench is a shell script")
	}
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"args: $*\"\necho 'amalgam-bench: failed' >&2\nexit " + code + "\n"
	if err := os.WriteFile(filepath.Join(dir, benchProgram), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

// amalgam-cli bench hands every argument, flags included, to amalgam-bench
// and exits with its status, leaving the error line to it.
func TestBenchRunsProgram(t *testing.T) {
	for _, code := range []string{"0", "3"} {
		fakeBench(t, code)
		args := []string{"storage", "--quick", "--output", "json", "--transport", "sim"}
		out, _, err := clitest.RunSplit(newRootCmd(), append([]string{"bench"}, args...)...)
		if got, want := strings.TrimSpace(out), "args: "+strings.Join(args, " "); got != want {
			t.Errorf("exit %s: amalgam-bench printed %q, want %q", code, got, want)
		}
		var ee *exitError
		switch {
		case code == "0" && err != nil:
			t.Errorf("exit 0: err = %v", err)
		case code == "3" && (!errors.As(err, &ee) || ee.code != 3 || !ee.reported):
			t.Errorf("exit 3: err = %#v, want exit status 3, already reported", err)
		}
	}
}

func TestBenchProgramMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := run(t, "bench", "all", "--quick")
	if err == nil || !strings.Contains(err.Error(), "go install ./bench/cmd/amalgam-bench") {
		t.Fatalf("err = %v, want how to install amalgam-bench", err)
	}
}
