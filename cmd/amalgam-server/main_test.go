package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestDevNotBuilt(t *testing.T) {
	out, err := run(t, "dev", "--durability", "memory")
	if !errors.Is(err, errNotBuilt) {
		t.Fatalf("err = %v, want errNotBuilt", err)
	}
	if want := "dev: the runtime is not built yet (see README Status)"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if !strings.Contains(out, "342 stripes") || !strings.Contains(out, "durability memory") {
		t.Errorf("plan does not describe the default layout:\n%s", out)
	}
}

func TestFlagValidation(t *testing.T) {
	for _, args := range [][]string{
		{"dev", "--machines", "4"},
		{"dev", "--g", "0"},
		{"dev", "--f", "0"},
		{"dev", "--w", "-1"},
		{"dev", "--blocks", "0"},
		{"dev", "--block-size", "0"},
		{"dev", "--durability", "disk"},
		{"dev", "--spares", "-1"},
		{"node", "--machine", "-2"},
		{"reconfig", "--id", "0"},
		{"reconfig", "--peers", "2=127.0.0.1:7500,nope"},
	} {
		_, err := run(t, args...)
		if err == nil || errors.Is(err, errNotBuilt) {
			t.Errorf("%v: err = %v, want a validation error", args, err)
		}
	}
}
