package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// errNotBuilt is returned by every subcommand until the runtime lands.
var errNotBuilt = errors.New("the runtime is not built yet (see README Status)")

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "amalgam-server",
		Short: "Run Amalgam, an erasure-coded linearizable block store",
		Long: `amalgam-server runs Amalgam, a sharded, linearizable block store whose fault
tolerance comes from erasure coding instead of replication.

  amalgam-server dev        a complete local cluster in one process
  amalgam-server node       one machine (data, parity and witness servers)
  amalgam-server reconfig   one replica of the reconfiguration service

The runtime is not built yet: every subcommand validates its flags and then
exits with status 1. See README.md, section Status.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newDevCmd(), newNodeCmd(), newReconfigCmd())
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
	return fmt.Errorf("%s: %w", cmd.Name(), err)
}
