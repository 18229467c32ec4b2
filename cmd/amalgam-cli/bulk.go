package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/msg"
)

// Shared by import and export: a pool of clients, block ranges, progress.

// dialPool connects n clients the way every command connects (dialWith);
// --timeout bounds the dial only, not the transfer.
func dialPool(cmd *cobra.Command, gl *globalFlags, n int) (*client.Pool, error) {
	_, cancel, p, err := dialWith(cmd, gl, func(ctx context.Context, o client.Options) (*client.Pool, error) {
		return client.DialPool(ctx, gl.cluster, o, n)
	})
	if err != nil {
		return nil, err
	}
	cancel()
	return p, nil
}

// parseBlockRange parses "A-B".
func parseBlockRange(s string) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || first > last {
		return 0, 0, fmt.Errorf("--blocks %q: want FIRST-LAST with FIRST <= LAST", s)
	}
	return first, last, nil
}

// bulkFlags are the flags import and export share.
type bulkFlags struct {
	concurrency int
	chunkBlocks int
	noProgress  bool
}

func (b *bulkFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&b.concurrency, "concurrency", 16, "chunks in flight at once")
	f.IntVar(&b.chunkBlocks, "chunk-blocks", 0, "blocks per chunk, the unit of progress and of resumption (0: 1 MiB worth)")
	f.BoolVar(&b.noProgress, "no-progress", false, "no progress bar on stderr")
}

func (b *bulkFlags) check() error {
	if b.concurrency < 1 || b.chunkBlocks < 0 {
		return errors.New("--concurrency must be positive and --chunk-blocks not negative")
	}
	return nil
}

// chunk returns the bytes per chunk for a block size.
func (b *bulkFlags) chunk(blockSize int) int64 {
	n := b.chunkBlocks
	if n == 0 {
		n = max(1, (1<<20)/blockSize)
	}
	return int64(n) * int64(blockSize)
}

// progress is a byte progress bar on stderr, or nothing when stderr is not
// a terminal, with --output json, or with --no-progress.
func (b *bulkFlags) progress(gl *globalFlags, total int64, what string) func(int64) {
	if b.noProgress || gl.output == "json" || !isTerminal(os.Stderr) {
		return func(int64) {}
	}
	bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true), progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond))
	return func(n int64) { _ = bar.Add64(n) }
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// writeRaw writes the bytes of every read in out (read --output raw).
func writeRaw(w io.Writer, ops []msg.Op, out msg.Outcome) error {
	if out.Aborted {
		return errors.New("aborted: a check failed; nothing was applied")
	}
	for i, op := range ops {
		if op.Kind == msg.OpRead {
			if _, err := w.Write(out.Results[i].Data); err != nil {
				return err
			}
		}
	}
	return nil
}
