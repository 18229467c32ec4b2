package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/runtime"
)

// baselineFlags checks --protocol and the flags a baseline cannot honour.
// A baseline runs in memory: --durability defaults to memory for it, and
// an explicit durable is refused.
func (fl *devFlags) baselineFlags(cmd *cobra.Command) error {
	switch fl.protocol {
	case runtime.Amalgam:
		return nil
	case runtime.ShardedPaxos, runtime.RSPaxos:
	default:
		return fmt.Errorf("--protocol must be %s, %s or %s, got %q", runtime.Amalgam, runtime.ShardedPaxos, runtime.RSPaxos, fl.protocol)
	}
	f := cmd.Flags()
	if !f.Changed("durability") {
		fl.durability = "memory"
	}
	if fl.durability != "memory" {
		return fmt.Errorf("--protocol %s runs in memory only (its replicas persist nothing): drop --durability %s", fl.protocol, fl.durability)
	}
	for _, name := range []string{"spares", "reconfig-replicas", "suspect-after", "rebuild-rate"} {
		if f.Changed(name) {
			return fmt.Errorf("--%s needs the reconfiguration service, which --protocol %s does not have", name, fl.protocol)
		}
	}
	return nil
}

func runBaselineDev(cmd *cobra.Command, fl devFlags, l erasure.Layout) error {
	env, ctx, err := fl.common.setup(cmd, l.BlockSize)
	if err != nil {
		return err
	}
	defer env.close()
	bl, err := runtime.StartBaselineLocal(fl.protocol, runtime.LocalOptions{Layout: l, Durability: fl.durability, Addr: fl.addr,
		Logger: env.log, ServerOptions: env.serverOpts, DialOptions: env.dialOpts, Register: env.register, Metrics: env.metrics})
	if err != nil {
		return err
	}
	b := bl.Baseline
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "protocol %s: %d groups of %d replicas (f=%d) on %d machines, %d blocks of %d bytes, in memory\n",
		fl.protocol, l.N, b.Members(), l.F, b.Machines(), l.NumBlocks(), l.BlockSize)
	for m, bm := range bl.Machines {
		fmt.Fprintf(out, "machine %d at %s: %s\n", m, bm.Addr(), bm.Replicas())
	}
	serveUntilStopped(ctx, out, env, fl.protocol, bl.EntryAddr, bl.Close)
	return nil
}
