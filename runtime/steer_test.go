package runtime

import (
	"log/slog"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

func TestSteeringFilters(t *testing.T) {
	h := &Host{log: slog.New(slog.DiscardHandler)}
	m := msg.ConfigOK{Num: 3}
	if k := MessageKind(m); k != "ConfigOK" {
		t.Fatalf("kind %q, want ConfigOK", k)
	}
	if h.steer.drops("data/0", "reconfig", m) {
		t.Fatal("dropped without a filter")
	}
	h.Steer("data/0", "reconfig", "ConfigOK", time.Hour)
	h.Steer("data/1", "reconfig", "ConfigOK", -time.Second) // already expired
	for _, c := range []struct {
		from, to string
		want     bool
	}{{"data/0", "reconfig", true}, {"data/1", "reconfig", false}, {"data/0", "parity/1", false}} {
		if got := h.steer.drops(node.Addr(c.from), node.Addr(c.to), m); got != c.want {
			t.Errorf("%s -> %s ConfigOK dropped: %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if h.steer.drops("data/0", "reconfig", msg.StopBackupOK{}) {
		t.Error("a filter of ConfigOK dropped a StopBackupOK")
	}
	if n := h.steer.n.Load(); n != 1 {
		t.Errorf("%d filters left, want 1 (the expired one forgotten)", n)
	}
	if !h.steer.paused("data/0", "parity/1").IsZero() {
		t.Error("a stream paused without a filter")
	}
	h.Steer("data/0", "parity/1", StreamKind, time.Hour)
	if h.steer.paused("data/0", "parity/1").IsZero() || !h.steer.paused("parity/1", "data/0").IsZero() {
		t.Error("the pause of data/0 -> parity/1 is not exactly that stream's")
	}
	if h.steer.drops("data/0", "parity/1", m) {
		t.Error("a stream pause dropped an unordered message")
	}
	h.Steer("parity/1", "parity/1", TimerPrefix+"retryRebuild", time.Hour)
	if h.steer.postponed("parity/1", retryRebuild{}).IsZero() || !h.steer.postponed("parity/2", retryRebuild{}).IsZero() {
		t.Error("the postponement of parity/1's retryRebuild is not exactly that node's")
	}
	h.Steer("data/0", "data/0", CheckPrefix+"PrepareOK", time.Hour)
	if !h.steer.checking("data/0", "PrepareOK") || h.steer.checking("data/1", "PrepareOK") || h.steer.checking("data/0", "Prepare") {
		t.Error("the check filter of data/0's PrepareOK is not exactly that node's and kind's")
	}
}

type retryRebuild struct{}

func (retryRebuild) Hash(*node.Hasher) {}
