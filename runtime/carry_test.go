package runtime

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestCarriedBatches: a data server's batch that takes one PREPARE-OK of
// two, its commit batch and a parity server's COMMIT and PREPARE-DROP
// batch are carried into the loop's next batch, not applied on their own
// (carry.go), and the writes still complete and read back.
func TestCarriedBatches(t *testing.T) {
	CountSyncCauses(true)
	defer CountSyncCauses(false)
	l := testLayout
	_, c := startDurableMem(t)
	ctx := context.Background()
	for i := range 4 {
		if err := c.Write(ctx, 0, 0, bytes.Repeat([]byte{byte(i + 1)}, l.BlockSize)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.Read(ctx, 0, 0, l.BlockSize)
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{4}, l.BlockSize)) {
		t.Fatalf("read back %d bytes, err %v", len(got), err)
	}
	// The last write's COMMIT and PREPARE-DROP reach the parity servers
	// once the data server's commit batch is durable (its background sync).
	var data, commit, parity int
	for deadline := time.Now().Add(safetyStop); parity == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		data, commit, parity = 0, 0, 0
		for cause, n := range SyncCauses() {
			if !strings.HasSuffix(cause, " carried") {
				continue
			}
			switch {
			case strings.HasPrefix(cause, "data in[PrepareOK] out[]"):
				data += n
			case strings.HasPrefix(cause, "data in[PrepareOK] out[Commit,PrepareDrop] +send"):
				commit += n
			case strings.HasPrefix(cause, "parity in[Commit"):
				parity += n
			}
		}
	}
	if data == 0 || commit == 0 || parity == 0 {
		t.Errorf("carried batches: %d of data servers taking a PREPARE-OK, %d committing, %d of parity servers committing; want some of each (causes %v)",
			data, commit, parity, SyncCauses())
	}
}

func setCarryDelay(d time.Duration) func() {
	old := carryDelay
	carryDelay = d
	return func() { carryDelay = old }
}
