// Package layoutflag declares the flags that describe a stripe layout
// (--machines, --g, --f, --w, --block-size, --blocks), for amalgam-server
// dev and reconfig and amalgam-cli layout (and --g, --f and --block-size
// for amalgam-bench recovery), and builds the layout they describe.
package layoutflag

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/amalgam-store/amalgam/erasure"
)

// Flags are the layout flags' values.
type Flags struct{ Machines, G, F, W, BlockSize, Blocks int }

// Register declares the flags on fs; --machines only if machines is set
// (amalgam-server reconfig counts its --machine-addrs instead).
func (fl *Flags) Register(fs *pflag.FlagSet, machines bool) {
	if machines {
		fs.IntVar(&fl.Machines, "machines", 5, "number of machines n")
	}
	Stripe(fs, &fl.G, &fl.F, &fl.BlockSize)
	fs.IntVar(&fl.W, "w", 0, "replication witnesses per stripe")
	fs.IntVar(&fl.Blocks, "blocks", 1024, "number of addressable blocks (rounded up to whole stripes)")
}

// Stripe declares --g, --f and --block-size on fs, into g, f and
// blockSize: Register's, and alone for a command that takes no other
// layout flag of this package (amalgam-bench recovery).
func Stripe(fs *pflag.FlagSet, g, f, blockSize *int) {
	fs.IntVar(g, "g", 3, "data blocks per stripe")
	fs.IntVar(f, "f", 2, "parity blocks per stripe (failures tolerated)")
	fs.IntVar(blockSize, "block-size", 4096, "bytes per block")
}

// Layout returns the layout the flags describe, --blocks rounded up to
// whole stripes, or the first problem with them.
func (fl Flags) Layout() (erasure.Layout, error) {
	if fl.Blocks < 1 {
		return erasure.Layout{}, fmt.Errorf("--blocks must be at least 1, got %d", fl.Blocks)
	}
	if fl.G < 1 {
		return erasure.Layout{}, fmt.Errorf("--g must be at least 1, got %d", fl.G)
	}
	l := erasure.Layout{N: fl.Machines, G: fl.G, F: fl.F, W: fl.W, Stripes: (fl.Blocks + fl.G - 1) / fl.G, BlockSize: fl.BlockSize}
	if err := l.Validate(); err != nil {
		return erasure.Layout{}, err
	}
	return l, nil
}
