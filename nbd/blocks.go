package nbd

import (
	"context"
	"time"

	"github.com/amalgam-store/amalgam/client"
)

// Blocks is a Backend over a range of Amalgam blocks. Amalgam acknowledges
// a write only once it is committed under the cluster's durability mode,
// so every acknowledged write already is as durable as the cluster makes
// it: FUA changes nothing and Flush has nothing left to do.
type Blocks struct {
	Pool  *client.Pool
	Range client.Range
	// Timeout bounds one request (default one minute); the Go client
	// retries inside it, across a machine's replacement.
	Timeout time.Duration
}

// zeroChunk is the most zero bytes one Zero call writes at once.
const zeroChunk = 1 << 20

var zeros = make([]byte, zeroChunk)

func (b *Blocks) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	t := b.Timeout
	if t <= 0 {
		t = time.Minute
	}
	return context.WithTimeout(ctx, t)
}

// ReadAt reads p from byte off of the range.
func (b *Blocks) ReadAt(ctx context.Context, p []byte, off int64) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	return b.Pool.ReadAt(ctx, b.Range, p, off)
}

// WriteAt writes p at byte off of the range.
func (b *Blocks) WriteAt(ctx context.Context, p []byte, off int64, _ bool) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	return b.Pool.WriteAt(ctx, b.Range, p, off)
}

// Zero writes zeros, a megabyte at a time.
func (b *Blocks) Zero(ctx context.Context, off, length int64, _ bool) error {
	for length > 0 {
		n := min(length, zeroChunk)
		if err := b.WriteAt(ctx, zeros[:n], off, false); err != nil {
			return err
		}
		off, length = off+n, length-n
	}
	return nil
}

// Flush returns at once: acknowledged writes are already committed.
func (b *Blocks) Flush(context.Context) error { return nil }
