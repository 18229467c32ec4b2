package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/runtime"
)

type placeJSON struct {
	Server  string `json:"server"`
	Machine int    `json:"machine"`
	Addr    string `json:"addr"`
}

type locateJSON struct {
	Block     uint64      `json:"block"`
	Shard     int         `json:"shard"`
	Stripe    int         `json:"stripe"`
	Position  int         `json:"position"`
	Data      placeJSON   `json:"data"`
	Parity    []placeJSON `json:"parity"`
	Witnesses []placeJSON `json:"witnesses"`
}

// locateBlock places block in layout l, with the machines' addresses.
func locateBlock(l erasure.Layout, addrs []string, block uint64) locateJSON {
	s, pos := l.Locate(block)
	place := func(r erasure.Role, m int) placeJSON {
		p := placeJSON{Server: string(msg.RoleAddr(r, m)), Machine: m}
		if m < len(addrs) {
			p.Addr = addrs[m]
		}
		return p
	}
	doc := locateJSON{Block: block, Shard: l.Shard(block), Stripe: s, Position: pos,
		Data: place(erasure.RoleData, l.DataMachine(s, pos)), Parity: []placeJSON{}, Witnesses: []placeJSON{}}
	for k := 0; k < l.F; k++ {
		doc.Parity = append(doc.Parity, place(erasure.RoleParity, l.ParityMachine(s, k)))
	}
	for k := 0; k < l.W; k++ {
		doc.Witnesses = append(doc.Witnesses, place(erasure.RoleWitness, l.WitnessMachine(s, k)))
	}
	return doc
}

func placesText(ps []placeJSON) string {
	if len(ps) == 0 {
		return "none"
	}
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s at %s", p.Server, p.Addr))
	}
	return strings.Join(out, ", ")
}

func newLocateCmd(gl *globalFlags) *cobra.Command {
	return blockCmd(&cobra.Command{
		Use:   "locate BLOCK",
		Short: "Show where a block lives: shard, stripe, data, parity and witness machines",
		Long: `locate asks the cluster for its layout and address book and prints where a
block lives: its shard (the data server that executes operations on it), its
stripe and position in the stripe, and the machines holding the stripe's
parity and witnesses. Blocks of one transaction must share a shard.

Examples:
  amalgam-cli locate 7
  amalgam-cli locate 7 --output json`,
	}, func(cmd *cobra.Command, block uint64) error {
		return withCluster(cmd, gl, func(ctx context.Context, c *client.Client) error {
			st, err := c.Status(ctx)
			if err != nil {
				return err
			}
			if p := st.GetProtocol(); p != "" && p != runtime.Amalgam {
				return fmt.Errorf("locate: the cluster runs %s, which has no stripes (any machine takes any block)", p)
			}
			l := c.Layout()
			if block >= l.NumBlocks() {
				return fmt.Errorf("block %d is out of range: the cluster has blocks 0..%d", block, l.NumBlocks()-1)
			}
			addrs := make([]string, l.N)
			for _, m := range st.GetMachines() {
				if i := int(m.GetIndex()); i >= 0 && i < l.N {
					addrs[i] = m.GetAddr()
				}
			}
			doc := locateBlock(l, addrs, block)
			w := cmd.OutOrStdout()
			if gl.output == "json" {
				return writeJSON(w, doc)
			}
			fmt.Fprintf(w, "block %d: shard %d, stripe %d position %d\n", doc.Block, doc.Shard, doc.Stripe, doc.Position)
			fmt.Fprintf(w, "data:      %s\n", placesText([]placeJSON{doc.Data}))
			fmt.Fprintf(w, "parity:    %s\n", placesText(doc.Parity))
			fmt.Fprintf(w, "witnesses: %s\n", placesText(doc.Witnesses))
			return nil
		})
	})
}

// explainStuck turns a transaction that ran out of time into what an
// operator can act on: which machine its shard or stripes wait for, and
// whether a spare can take over. It asks the cluster's status once more
// (within --dial-timeout); if nothing the operation needs is down, it says
// only that the operation may still take effect.
func explainStuck(cmd *cobra.Command, gl *globalFlags, c *client.Client, ops []msg.Op, err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	may := fmt.Sprintf("no answer within --timeout %v; the operation may still take effect", gl.timeout)
	ctx, cancel := context.WithTimeout(cmd.Context(), gl.dialTimeout+gl.timeout/4)
	defer cancel()
	doc, serr := fetchStatus(ctx, c, gl.cluster)
	if serr != nil || doc.Protocol != runtime.Amalgam {
		return fmt.Errorf("%s (%v)", may, err)
	}
	down := map[int]bool{}
	for _, m := range doc.Machines {
		if m.unreachable() {
			down[m.Index] = true
		}
	}
	l := doc.layout
	var why []string
	if sh := l.Shard(ops[0].Block); down[sh] {
		why = append(why, fmt.Sprintf("shard %d's data server (machine %d at %s) is down", sh, sh, doc.Machines[sh].Addr))
	}
	var stripes []int
	for _, op := range ops {
		if s, _ := l.Locate(op.Block); !slices.Contains(stripes, s) {
			stripes = append(stripes, s)
		}
	}
	for _, s := range stripes {
		var gone []string
		for _, b := range l.Backups(s) {
			if down[b] {
				gone = append(gone, fmt.Sprint(b))
			}
		}
		if len(l.Backups(s))-len(gone) < l.F {
			why = append(why, fmt.Sprintf("stripe %d has no quorum (it needs %d of its %d parity servers and witnesses; machine %s down)",
				s, l.F, l.F+l.W, strings.Join(gone, ", ")))
		}
	}
	if len(why) == 0 {
		return fmt.Errorf("%s (%v)", may, err)
	}
	spare := "no spare is registered, so it waits until the machine returns (or amalgam-cli admin replace)"
	if doc.SpareAvailable {
		spare = "a spare should take the machine's place; retry once status shows it up"
	}
	return fmt.Errorf("operation cannot complete: %s; %s; it may still take effect later", strings.Join(why, "; "), spare)
}
