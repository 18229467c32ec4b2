package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/runtime"
)

// baselineFlags checks --protocol and the flags a baseline cannot honour.
// --durability defaults to memory for a baseline; durable keeps its
// replicas in pebble stores under --data-dir.
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
	for _, name := range []string{"spares", "reconfig-replicas", "suspect-after", "rebuild-rate"} {
		if f.Changed(name) {
			return fmt.Errorf("--%s needs the reconfiguration service, which --protocol %s does not have", name, fl.protocol)
		}
	}
	return nil
}

func runBaselineDev(cmd *cobra.Command, fl devFlags, l erasure.Layout) error {
	if err := checkDataDir(fl.dataDir, l, fl.durability, fl.protocol); err != nil {
		return err
	}
	if err := checkProtocol(fl.dataDir, fl.protocol, fl.durability); err != nil {
		return err
	}
	env, ctx, err := fl.common.setup(cmd, l.BlockSize)
	if err != nil {
		return err
	}
	defer env.close()
	bl, err := runtime.StartBaselineLocal(fl.protocol, runtime.LocalOptions{Layout: l, Durability: fl.durability, DataDir: fl.dataDir,
		Addr: fl.addr, Logger: env.log, ServerOptions: env.serverOpts, DialOptions: env.dialOpts, Register: env.register, Metrics: env.metrics})
	if err != nil {
		return err
	}
	b := bl.Baseline
	out := cmd.OutOrStdout()
	where := "in memory"
	if fl.durability == "durable" {
		where = "durable under " + fl.dataDir
	}
	fmt.Fprintf(out, "protocol %s: %d groups of %d replicas (f=%d) on %d machines, %d blocks of %d bytes, %s\n",
		fl.protocol, l.N, b.Members(), l.F, b.Machines(), l.NumBlocks(), l.BlockSize, where)
	for m, bm := range bl.Machines {
		fmt.Fprintf(out, "machine %d at %s: %s\n", m, bm.Addr(), bm.Replicas())
	}
	serveUntilStopped(ctx, out, env, fl.protocol, bl.EntryAddr, bl.Close)
	return nil
}

// checkProtocol records the baseline protocol in dir/protocol on first
// durable use and refuses to start another protocol on the directory (a
// directory checkDataDir recorded without it holds an Amalgam cluster).
func checkProtocol(dir, protocol, durability string) error {
	if durability == "memory" {
		return nil
	}
	p := filepath.Join(dir, "protocol")
	got, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		if _, err := os.Stat(filepath.Join(dir, "machine-0")); err == nil {
			return fmt.Errorf("--data-dir %s holds an amalgam cluster; use another --data-dir for --protocol %s", dir, protocol)
		}
		return writeFileDurably(p, []byte(protocol+"\n"))
	}
	if err != nil {
		return err
	}
	if old := strings.TrimSpace(string(got)); old != protocol {
		return fmt.Errorf("--data-dir %s holds a %s cluster; start it with --protocol %s or use another --data-dir", dir, old, old)
	}
	return nil
}
