package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/internal/clitest"
	"github.com/amalgam-store/amalgam/runtime/cluster"
)

// safetyStop bounds TestAdmin's waits for a replacement and for health
// only to turn a hang into a clear failure: on a loaded machine they may
// take longer than any short window.
const safetyStop = 5 * time.Minute

// TestAdmin runs admin replace and admin config against an in-process
// cluster with a spare: an in-place replacement, a machine moved to the
// spare, bad arguments; status reports health.
func TestAdmin(t *testing.T) {
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 4, BlockSize: 32}
	lc, err := cluster.Start(cluster.Options{Layout: l, Durability: "memory", Addr: "127.0.0.1:0", Spares: 1,
		RaftTick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	cl := "--cluster=" + lc.Entries
	type history struct {
		Configs []struct {
			Num      uint64   `json:"num"`
			Replaced string   `json:"replaced"`
			Data     []uint64 `json:"data"`
		} `json:"configs"`
		Hosts     []string `json:"hosts"`
		Spares    []string `json:"spares"`
		Replacing bool     `json:"replacing"`
		Leader    string   `json:"leader"`
	}
	config := func() history {
		t.Helper()
		out, err := run(t, cl, "--output", "json", "admin", "config")
		if err != nil {
			t.Fatalf("admin config: %v\n%s", err, out)
		}
		var h history
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			t.Fatalf("admin config output: %v\n%s", err, out)
		}
		return h
	}
	wait := func(what string, cond func(history) bool) history {
		t.Helper()
		deadline := time.Now().Add(safetyStop)
		for {
			h := config()
			if cond(h) {
				return h
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %v: %+v", what, safetyStop, h)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	healthy := func(num uint64) {
		t.Helper()
		deadline := time.Now().Add(safetyStop)
		for {
			out, err := run(t, cl, "--output", "json", "status")
			var st struct {
				ConfigNum uint64 `json:"config_num"`
				Healthy   bool   `json:"healthy"`
			}
			if err == nil && json.Unmarshal([]byte(out), &st) == nil && st.Healthy && st.ConfigNum == num {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not healthy in configuration %d after %v: %v\n%s", num, safetyStop, err, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	h := wait("the spare registered", func(h history) bool { return len(h.Spares) == 1 && h.Leader != "" })
	if len(h.Configs) != 1 || h.Configs[0].Replaced != "" || h.Hosts[2] != lc.MachineAddrs[2] {
		t.Fatalf("initial history %+v", h)
	}
	healthy(0)

	out, err := run(t, cl, "admin", "replace", "data/1")
	if err != nil || !strings.Contains(out, "replacing data/1 (incarnation 1)") {
		t.Fatalf("admin replace data/1: %v\n%s", err, out)
	}
	h = wait("data/1 replaced", func(h history) bool { return len(h.Configs) == 2 && !h.Replacing })
	if c := h.Configs[1]; c.Replaced != "data/1" || c.Data[1] != 2 {
		t.Fatalf("configuration 1: %+v", c)
	}
	healthy(1)

	out, err = run(t, cl, "admin", "replace", "machine/2", "--to-spare")
	if err != nil || !strings.Contains(out, "replacing data/2") || !strings.Contains(out, "replacing parity/2") ||
		!strings.Contains(out, "served by "+lc.SpareAddrs[0]) {
		t.Fatalf("admin replace machine/2 --to-spare: %v\n%s", err, out)
	}
	h = wait("machine 2 replaced on the spare", func(h history) bool { return len(h.Configs) == 4 && !h.Replacing })
	if h.Hosts[2] != lc.SpareAddrs[0] || len(h.Spares) != 0 {
		t.Fatalf("after the move: hosts %v, spares %v", h.Hosts, h.Spares)
	}
	healthy(3)
	out, err = run(t, cl, "admin", "config")
	if err != nil || !strings.Contains(out, "configuration 3: replaced parity/2") || !strings.Contains(out, "machine 2 at "+lc.SpareAddrs[0]) {
		t.Fatalf("admin config text: %v\n%s", err, out)
	}

	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{cl, "admin", "replace", "data/9"}, "server: \"data/9\" is not"},
		{[]string{cl, "admin", "replace", "witness/1"}, "no witnesses"},
		{[]string{cl, "admin", "replace", "machine/1", "--to-spare"}, "no live spare"},
		{[]string{cl, "admin", "replace"}, "accepts 1 arg"},
	})
}
