package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/runtime"
)

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
