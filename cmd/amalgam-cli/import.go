package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
)

func newImportCmd(gl *globalFlags) *cobra.Command {
	var (
		bf          bulkFlags
		first, last int64
		statePath   string
	)
	cmd := &cobra.Command{
		Use:   "import FILE --first-block N",
		Short: "Write a file into consecutive blocks, resumably",
		Long: `import writes FILE into blocks N, N+1, ... (a last partial block is written
at offset 0 and the rest of that block is kept), --concurrency chunks at a
time. It checks everything first: a file that does not fit between
--first-block and --last-block (default: the cluster's last block), or an
unreachable cluster, is refused before anything is written.

Each chunk the cluster acknowledges is recorded in a state file (default
FILE.amalgam-import). If the import fails or is interrupted, the same
command resumes it: acknowledged chunks are not written again. The state
file is removed when the import completes; it is ignored (and the import
starts over) if FILE, its block size or its target changed.

Examples:
  amalgam-cli import disk.img --first-block 0
  amalgam-cli import disk.img --first-block 512 --last-block 1023 --concurrency 32
  amalgam-cli --output json import disk.img --first-block 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("first-block") {
				return errors.New("give --first-block")
			}
			if err := bf.check(); err != nil {
				return err
			}
			if first < 0 || cmd.Flags().Changed("last-block") && last < first {
				return errors.New("--first-block must not be negative nor above --last-block")
			}
			if statePath == "" {
				statePath = args[0] + ".amalgam-import"
			}
			return runImport(cmd, gl, bf, args[0], statePath, uint64(first), last)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&first, "first-block", 0, "block the file's first byte goes to")
	f.Int64Var(&last, "last-block", -1, "last block the file may use (default: the cluster's last)")
	f.StringVar(&statePath, "state", "", "state file recording acknowledged chunks (default FILE.amalgam-import)")
	bf.register(cmd)
	return cmd
}

// importHeader identifies an import; a state file whose header differs
// belongs to another import.
type importHeader struct {
	Cluster    string `json:"cluster"`
	FileSize   int64  `json:"file_size"`
	ModTime    int64  `json:"mod_time_ns"`
	BlockSize  int    `json:"block_size"`
	FirstBlock uint64 `json:"first_block"`
	ChunkBytes int64  `json:"chunk_bytes"`
}

type importJSON struct {
	File          string `json:"file"`
	Bytes         int64  `json:"bytes"`
	FirstBlock    uint64 `json:"first_block"`
	LastBlock     uint64 `json:"last_block"`
	Chunks        int    `json:"chunks"`
	ChunksResumed int    `json:"chunks_resumed"`
}

func runImport(cmd *cobra.Command, gl *globalFlags, bf bulkFlags, path, statePath string, first uint64, lastFlag int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	pool, err := dialPool(cmd, gl, bf.concurrency)
	if err != nil {
		return err
	}
	defer pool.Close()
	l := pool.Layout()
	if first >= l.NumBlocks() {
		return fmt.Errorf("--first-block %d is past the last block (the cluster has blocks 0 to %d)", first, l.NumBlocks()-1)
	}
	last := uint64(lastFlag)
	if lastFlag < 0 {
		last = l.NumBlocks() - 1
	}
	r, err := client.RangeOf(l, first, last)
	if err != nil {
		return err
	}
	if st.Size() > r.Size() {
		return fmt.Errorf("%s is %d bytes but blocks %d-%d hold %d (%d-byte blocks); nothing was written",
			path, st.Size(), r.First, r.Last(), r.Size(), l.BlockSize)
	}
	hdr := importHeader{Cluster: gl.cluster, FileSize: st.Size(), ModTime: st.ModTime().UnixNano(), BlockSize: l.BlockSize,
		FirstBlock: first, ChunkBytes: bf.chunk(l.BlockSize)}
	done, state, err := openImportState(statePath, hdr, cmd)
	if err != nil {
		return err
	}
	defer state.Close()

	chunks := int((st.Size() + hdr.ChunkBytes - 1) / hdr.ChunkBytes)
	resumed := 0
	for i := range chunks {
		if done[i] {
			resumed++
		}
	}
	progress := bf.progress(gl, st.Size(), "import")
	progress(min(int64(resumed)*hdr.ChunkBytes, st.Size()))
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	var (
		mu       sync.Mutex // guards state and firstErr
		firstErr error
		wg       sync.WaitGroup
	)
	todo := make(chan int)
	for range bf.concurrency {
		wg.Go(func() {
			for i := range todo {
				off := int64(i) * hdr.ChunkBytes
				buf := make([]byte, min(hdr.ChunkBytes, st.Size()-off))
				err := importChunk(ctx, gl, pool, r, f, buf, off)
				mu.Lock()
				if err == nil {
					_, err = fmt.Fprintf(state, "%d\n", i)
				}
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
				if err == nil {
					progress(int64(len(buf)))
				}
			}
		})
	}
feed:
	for i := range chunks {
		if done[i] {
			continue
		}
		select {
		case todo <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(todo)
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("import stopped (%v); acknowledged chunks are recorded in %s: run the same command to resume", firstErr, statePath)
	}
	if err := cmd.Context().Err(); err != nil {
		return err
	}
	_ = state.Close()
	_ = os.Remove(statePath)
	out := importJSON{File: path, Bytes: st.Size(), FirstBlock: first, Chunks: chunks, ChunksResumed: resumed,
		LastBlock: first + uint64(max(1, (st.Size()+int64(l.BlockSize)-1)/int64(l.BlockSize))) - 1}
	if gl.output == "json" {
		return writeJSON(cmd.OutOrStdout(), out)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "imported %s: %d bytes into blocks %d-%d (%d chunks, %d already done)\n",
		path, out.Bytes, out.FirstBlock, out.LastBlock, out.Chunks, out.ChunksResumed)
	return err
}

func importChunk(ctx context.Context, gl *globalFlags, pool *client.Pool, r client.Range, f *os.File, buf []byte, off int64) error {
	if _, err := f.ReadAt(buf, off); err != nil {
		return fmt.Errorf("reading %s at %d: %w", f.Name(), off, err)
	}
	ctx, cancel := context.WithTimeout(ctx, gl.timeout)
	defer cancel()
	return pool.WriteAt(ctx, r, buf, off)
}

// openImportState reads the chunks an earlier run of the same import
// recorded and opens the state file for appending. The file's first line
// is the import's header; each further line is an acknowledged chunk. A
// torn last line (the process died writing it) is ignored, as is a state
// file whose header differs.
func openImportState(path string, hdr importHeader, cmd *cobra.Command) (map[int]bool, *os.File, error) {
	want, _ := json.Marshal(hdr)
	done := map[int]bool{}
	if old, err := os.ReadFile(path); err == nil {
		lines := strings.Split(string(old), "\n")
		if lines[0] == string(want) {
			// Only newline-terminated lines are complete.
			for _, ln := range lines[1 : len(lines)-1] {
				if i, err := strconv.Atoi(ln); err == nil {
					done[i] = true
				}
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, nil, err
			}
			if !strings.HasSuffix(string(old), "\n") {
				_, err = f.WriteString("\n") // end a torn line
			}
			return done, f, err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s belongs to another import (the file, its target or the cluster changed); starting over\n", path)
	} else if !os.IsNotExist(err) {
		return nil, nil, fmt.Errorf("state file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("state file: %w", err)
	}
	w := bufio.NewWriter(f)
	_, _ = w.Write(want)
	_ = w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("state file: %w", err)
	}
	return done, f, nil
}
