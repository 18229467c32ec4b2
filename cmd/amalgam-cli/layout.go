package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/internal/layoutflag"
	"github.com/spf13/cobra"
)

func newLayoutCmd(gl *globalFlags) *cobra.Command {
	var (
		lf  layoutflag.Flags
		all bool
	)
	cmd := &cobra.Command{
		Use:   "layout",
		Short: "Print which role each machine plays in each stripe",
		Long: `layout prints the stripe layout for the given parameters without contacting
a cluster: one row per stripe with its block numbers, one column per machine,
and each cell the machine's role in that stripe: dK=B (data position K, block
B), pK (parity block K), wK (witness K) or - (none). Roles rotate across
machines, so the pattern repeats every --machines stripes: text shows one
rotation and how to find any block (--all: every stripe; JSON: every stripe).
amalgam-cli locate BLOCK asks a running cluster where a block lives.

Examples:
  amalgam-cli layout
  amalgam-cli layout --machines 6 --w 1 --blocks 12 --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := lf.Layout()
			if err != nil {
				return fmt.Errorf("layout: %w", err)
			}
			if gl.output == "json" {
				return writeJSON(cmd.OutOrStdout(), layoutJSON(l))
			}
			return writeLayoutText(cmd.OutOrStdout(), l, all)
		},
	}
	fl := cmd.Flags()
	lf.Register(fl, true)
	fl.BoolVar(&all, "all", false, "print every stripe, not one rotation")
	return cmd
}

// roleLabel names machine m's role in stripe s: d0=B (block B), p1, w0
// or -.
func roleLabel(l erasure.Layout, s, m int) string {
	r, i := l.RoleOf(s, m)
	switch r {
	case erasure.RoleData:
		return fmt.Sprintf("d%d=%d", i, l.Block(s, i))
	case erasure.RoleParity:
		return fmt.Sprintf("p%d", i)
	case erasure.RoleWitness:
		return fmt.Sprintf("w%d", i)
	}
	return "-"
}

func stripeRoles(l erasure.Layout, s int) []string {
	roles := make([]string, l.N)
	for m := range roles {
		roles[m] = roleLabel(l, s, m)
	}
	return roles
}

func overhead(l erasure.Layout) float64 { return float64(l.F) / float64(l.G) }

func writeLayoutText(out io.Writer, l erasure.Layout, all bool) error {
	if _, err := fmt.Fprintf(out, "n=%d g=%d f=%d w=%d: %d stripes, %d blocks of %d bytes, storage overhead f/g=%.2f\n",
		l.N, l.G, l.F, l.W, l.Stripes, l.NumBlocks(), l.BlockSize, overhead(l)); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := []string{"stripe", "blocks"}
	for m := 0; m < l.N; m++ {
		header = append(header, fmt.Sprintf("m%d", m))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	rows := l.Stripes
	if !all {
		rows = min(rows, l.N)
	}
	for s := 0; s < rows; s++ {
		fmt.Fprintf(tw, "%d\t%d-%d\t%s\n", s, l.Block(s, 0), l.Block(s, l.G-1), strings.Join(stripeRoles(l, s), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rows < l.Stripes {
		_, err := fmt.Fprintf(out, "stripes %d-%d repeat this pattern: stripe s plays the roles of stripe s mod %d, and block b is\n"+
			"stripe b/%d position b mod %d, on the machine of that position (amalgam-cli locate b asks the cluster; --all prints every stripe)\n",
			rows, l.Stripes-1, l.N, l.G, l.G)
		return err
	}
	return nil
}

type layoutRow struct {
	Stripe int      `json:"stripe"`
	Blocks []uint64 `json:"blocks"`
	Roles  []string `json:"roles"`
}

type layoutDoc struct {
	Machines  int         `json:"machines"`
	G         int         `json:"g"`
	F         int         `json:"f"`
	W         int         `json:"w"`
	Stripes   int         `json:"stripes"`
	Blocks    uint64      `json:"blocks"`
	BlockSize int         `json:"block_size"`
	Overhead  float64     `json:"storage_overhead"`
	Rows      []layoutRow `json:"rows"`
}

func layoutJSON(l erasure.Layout) layoutDoc {
	doc := layoutDoc{
		Machines: l.N, G: l.G, F: l.F, W: l.W,
		Stripes: l.Stripes, Blocks: l.NumBlocks(), BlockSize: l.BlockSize,
		Overhead: overhead(l),
		Rows:     make([]layoutRow, l.Stripes),
	}
	for s := range doc.Rows {
		doc.Rows[s] = layoutRow{Stripe: s, Roles: stripeRoles(l, s)}
		for p := 0; p < l.G; p++ {
			doc.Rows[s].Blocks = append(doc.Rows[s].Blocks, l.Block(s, p))
		}
	}
	return doc
}
