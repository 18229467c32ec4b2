package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCExploreBadInput: a corrupted or foreign trace, an unknown name and
// a port in use each give a one-line error before anything is served.
func TestMCExploreBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	corrupted := write("corrupted.json", `{"version": 1, "scenario": "normal", "ev`)
	foreign := write("foreign.json", `{"version": 1, "scenario": "no-such-scenario", "events": []}`)
	notJSON := write("notes.txt", "step 1: deliver\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{corrupted}, "corrupted JSON"},
		{[]string{notJSON}, "not a trace file"},
		{[]string{foreign}, `unknown scenario "no-such-scenario"`},
		{[]string{"no-such-scenario"}, "neither a scenario"},
		{[]string{"normal", "--addr", ln.Addr().String()}, ln.Addr().String() + " is in use"},
	} {
		_, _, err := runMC(t, append([]string{"mc", "explore"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") ||
			!strings.HasPrefix(err.Error(), "mc explore: ") {
			t.Errorf("mc explore %v: %v, want one line with %q", c.args, err, c.want)
		}
	}
}
