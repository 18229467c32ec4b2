package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "amalgam-server",
		Short: "Run Amalgam, an erasure-coded linearizable block store",
		Long: `amalgam-server runs Amalgam, a sharded, linearizable block store whose fault
tolerance comes from erasure coding instead of replication.

  amalgam-server dev        a complete local cluster in one process
  amalgam-server node       one machine (data, parity and witness servers), or a spare
  amalgam-server reconfig   one replica of the reconfiguration service
  amalgam-server nbd        serve ranges of blocks as Network Block Devices

The reconfiguration service (Raft-replicated) replaces failed servers, using
spare machines (amalgam-server node --spare). See docs/reconfiguration.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newDevCmd(), newNodeCmd(), newReconfigCmd(), newNBDCmd())
	return root
}

// checkDurability validates a --durability value.
func checkDurability(d string) error {
	switch d {
	case "durable", "memory":
		return nil
	}
	return fmt.Errorf("--durability must be durable or memory, got %q", d)
}

// cmdError prefixes err with the subcommand's name, as in "dev: ...".
func cmdError(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", cmd.Name(), err)
}
