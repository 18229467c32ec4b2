package runtime

import (
	"bytes"
	"context"
	"testing"
)

// TestStageTimes: with stage times on, durable writes record every stage
// of their path, each at least once per write, with ordered percentiles;
// with them off, nothing is recorded.
func TestStageTimes(t *testing.T) {
	l := testLayout
	_, c := startDurableMem(t)
	write := func(i int) {
		if err := c.Write(context.Background(), 0, 0, bytes.Repeat([]byte{byte(i + 1)}, l.BlockSize)); err != nil {
			t.Fatal(err)
		}
	}
	write(0) // connected
	CountStageTimes(true)
	defer CountStageTimes(false)
	const writes = 3
	for i := range writes {
		write(i + 1)
	}
	got := map[string]StageTime{}
	for _, s := range StageTimes() {
		got[s.Stage] = s
	}
	for _, stage := range []string{"execute", "inbox data", "inbox parity", "handle+write data", "handle+write parity",
		"durable data synced", "durable parity synced", "fsync wal", "stream"} {
		s, ok := got[stage]
		switch {
		case !ok:
			t.Errorf("stage %q not recorded (got %v)", stage, got)
		case s.N < writes:
			t.Errorf("stage %q recorded %d times for %d writes", stage, s.N, writes)
		case s.Mean <= 0 || s.P50 > s.P90 || s.P90 > s.P99:
			t.Errorf("stage %q: mean %v, p50 %v, p90 %v, p99 %v", stage, s.Mean, s.P50, s.P90, s.P99)
		}
	}
	CountStageTimes(false)
	write(writes + 1)
	if s := StageTimes(); len(s) != 0 {
		t.Errorf("with stage times off, recorded %v", s)
	}
}
