package main

import (
	"strings"
	"testing"
)

// TestRMWRefusesIgnoredFlags: flags an operation would ignore are refused
// before anything is sent (the cluster address here has nothing behind it).
func TestRMWRefusesIgnoredFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rmw", "7", "--op", "add", "--delta", "1", "--data", "x"}, "--data does not go with --op add"},
		{[]string{"rmw", "7", "--op", "add", "--delta", "1", "--hex", "ff"}, "--hex does not go with --op add"},
		{[]string{"rmw", "7", "--op", "xor", "--hex", "ff", "--delta", "1"}, "--delta only goes with --op add"},
	} {
		_, err := run(t, append([]string{"--cluster", "127.0.0.1:1"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
