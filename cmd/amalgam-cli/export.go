package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
)

func newExportCmd(gl *globalFlags) *cobra.Command {
	var (
		bf     bulkFlags
		blocks string
		output string
		size   int64
	)
	cmd := &cobra.Command{
		Use:   "export --blocks A-B [-o FILE]",
		Short: "Read consecutive blocks out as raw bytes",
		Long: `export reads blocks A to B, --concurrency chunks at a time, and writes their
bytes in order to stdout, or to FILE with -o (written under a temporary
name and renamed at the end, so FILE appears only complete). --size N keeps
only the first N bytes (for a file imported with a last partial block).

Examples:
  amalgam-cli export --blocks 0-1023 > disk.img
  amalgam-cli export --blocks 0-255 --size 1000000 -o part.bin
  amalgam-cli --output json export --blocks 0-1023 -o disk.img`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bf.check(); err != nil {
				return err
			}
			if blocks == "" {
				return errors.New("give --blocks FIRST-LAST")
			}
			first, last, err := parseBlockRange(blocks)
			if err != nil {
				return err
			}
			if output == "" && gl.output == "json" {
				return errors.New("--output json needs -o FILE: stdout carries the data")
			}
			if cmd.Flags().Changed("size") && size < 0 {
				return errors.New("--size must not be negative")
			}
			return runExport(cmd, gl, bf, first, last, output, size)
		},
	}
	f := cmd.Flags()
	f.StringVar(&blocks, "blocks", "", "FIRST-LAST: the blocks to read")
	f.StringVarP(&output, "out", "o", "", "write to this file instead of stdout")
	f.Int64Var(&size, "size", -1, "write only the first N bytes (default: all the blocks)")
	bf.register(cmd)
	return cmd
}

type exportJSON struct {
	File       string `json:"file"`
	Bytes      int64  `json:"bytes"`
	FirstBlock uint64 `json:"first_block"`
	LastBlock  uint64 `json:"last_block"`
}

func runExport(cmd *cobra.Command, gl *globalFlags, bf bulkFlags, first, last uint64, path string, size int64) error {
	pool, err := dialPool(cmd, gl, bf.concurrency)
	if err != nil {
		return err
	}
	defer pool.Close()
	r, err := client.RangeOf(pool.Layout(), first, last)
	if err != nil {
		return err
	}
	if size < 0 {
		size = r.Size()
	}
	if size > r.Size() {
		return fmt.Errorf("--size %d is more than blocks %d-%d hold (%d bytes)", size, first, last, r.Size())
	}
	var w io.Writer = cmd.OutOrStdout()
	var tmp *os.File
	if path != "" {
		if tmp, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*"); err != nil {
			return err
		}
		defer func() {
			tmp.Close()
			_ = os.Remove(tmp.Name()) // gone already after a successful rename
		}()
		w = tmp
	}
	if err := exportTo(cmd.Context(), gl, bf, pool, r, size, w); err != nil {
		return err
	}
	if tmp != nil {
		if err := tmp.Sync(); err != nil {
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return err
		}
	}
	if gl.output == "json" {
		return writeJSON(cmd.OutOrStdout(), exportJSON{File: path, Bytes: size, FirstBlock: first, LastBlock: last})
	}
	if path != "" {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "exported blocks %d-%d to %s: %d bytes\n", first, last, path, size)
	}
	return err
}

// exportTo reads the first size bytes of r chunk by chunk, --concurrency
// at a time, and writes them to w in order.
func exportTo(ctx context.Context, gl *globalFlags, bf bulkFlags, pool *client.Pool, r client.Range, size int64, w io.Writer) error {
	type result struct {
		data []byte
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunk := bf.chunk(r.BlockSize)
	pending := make(chan chan result, bf.concurrency) // in order
	go func() {
		defer close(pending)
		for off := int64(0); off < size; off += chunk {
			ch := make(chan result, 1)
			select {
			case pending <- ch:
			case <-ctx.Done():
				return
			}
			go func() {
				buf := make([]byte, min(chunk, size-off))
				rctx, rcancel := context.WithTimeout(ctx, gl.timeout)
				defer rcancel()
				ch <- result{buf, pool.ReadAt(rctx, r, buf, off)}
			}()
		}
	}()
	progress := bf.progress(gl, size, "export")
	for ch := range pending {
		res := <-ch
		if res.err != nil {
			return res.err
		}
		if _, err := w.Write(res.data); err != nil {
			return err
		}
		progress(int64(len(res.data)))
	}
	return ctx.Err()
}
