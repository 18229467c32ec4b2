package main

import (
	"fmt"
	"io"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/spf13/cobra"
)

type devFlags struct {
	dataDir    string
	addr       string
	machines   int
	g, f, w    int
	blockSize  int
	blocks     int
	durability string
	spares     int
}

func newDevCmd() *cobra.Command {
	var fl devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a complete local cluster in one process",
		Long: `dev runs a complete local cluster in one process: the reconfiguration
service, --machines machines (each hosting a data, a parity and a witness
server) and --spares spare machines, each on its own loopback port. Clients
reach it at --addr; data lives under --data-dir and survives restarts.

Not built yet: dev validates its flags, prints the layout it would run and
exits with status 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := fl.layout()
			if err != nil {
				return cmdError(cmd, err)
			}
			printDevPlan(cmd.OutOrStdout(), fl, l)
			return cmdError(cmd, errNotBuilt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.dataDir, "data-dir", "./amalgam-data", "directory for blocks and protocol state")
	f.StringVar(&fl.addr, "addr", "127.0.0.1:7400", "entry address clients connect to")
	f.IntVar(&fl.machines, "machines", 5, "number of machines n")
	f.IntVar(&fl.g, "g", 3, "data blocks per stripe")
	f.IntVar(&fl.f, "f", 2, "parity blocks per stripe (failures tolerated)")
	f.IntVar(&fl.w, "w", 0, "replication witnesses per stripe")
	f.IntVar(&fl.blockSize, "block-size", 4096, "bytes per block")
	f.IntVar(&fl.blocks, "blocks", 1024, "number of addressable blocks (rounded up to whole stripes)")
	f.StringVar(&fl.durability, "durability", "durable", "durable (pebble) or memory")
	f.IntVar(&fl.spares, "spares", 0, "spare machines that can replace failed ones")
	return cmd
}

// layout validates the flags and returns the stripe layout they describe.
func (fl devFlags) layout() (erasure.Layout, error) {
	if fl.dataDir == "" {
		return erasure.Layout{}, fmt.Errorf("--data-dir must not be empty")
	}
	if fl.addr == "" {
		return erasure.Layout{}, fmt.Errorf("--addr must not be empty")
	}
	if err := checkDurability(fl.durability); err != nil {
		return erasure.Layout{}, err
	}
	if fl.spares < 0 {
		return erasure.Layout{}, fmt.Errorf("--spares must not be negative, got %d", fl.spares)
	}
	if fl.blocks < 1 {
		return erasure.Layout{}, fmt.Errorf("--blocks must be at least 1, got %d", fl.blocks)
	}
	if fl.g < 1 {
		return erasure.Layout{}, fmt.Errorf("--g must be at least 1, got %d", fl.g)
	}
	l := erasure.Layout{
		N: fl.machines, G: fl.g, F: fl.f, W: fl.w,
		Stripes:   (fl.blocks + fl.g - 1) / fl.g,
		BlockSize: fl.blockSize,
	}
	if err := l.Validate(); err != nil {
		return erasure.Layout{}, err
	}
	return l, nil
}

func printDevPlan(w io.Writer, fl devFlags, l erasure.Layout) {
	fmt.Fprintf(w, "layout: n=%d g=%d f=%d w=%d, %d stripes, %d blocks of %d bytes, storage overhead f/g=%.2f\n",
		l.N, l.G, l.F, l.W, l.Stripes, l.NumBlocks(), l.BlockSize, float64(l.F)/float64(l.G))
	fmt.Fprintf(w, "would run: reconfiguration service, %d machines (data, parity, witness servers each), %d spares\n",
		l.N, fl.spares)
	fmt.Fprintf(w, "entry address %s, data under %s, durability %s\n", fl.addr, fl.dataDir, fl.durability)
}
