package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newNodeCmd() *cobra.Command {
	var (
		dataDir, addr, reconfig, durability string
		machine                             int
	)
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run one machine: its data, parity and witness servers",
		Long: `node runs one machine of a cluster: its data, parity and witness servers.
It learns the layout and its role from the reconfiguration service.

Not built yet: node validates its flags and exits with status 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case dataDir == "":
				return cmdError(cmd, fmt.Errorf("--data-dir must not be empty"))
			case addr == "":
				return cmdError(cmd, fmt.Errorf("--addr must not be empty"))
			case reconfig == "":
				return cmdError(cmd, fmt.Errorf("--reconfig must not be empty"))
			case machine < -1:
				return cmdError(cmd, fmt.Errorf("--machine must be -1 (spare) or a machine index, got %d", machine))
			}
			if err := checkDurability(durability); err != nil {
				return cmdError(cmd, err)
			}
			return cmdError(cmd, errNotBuilt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "./amalgam-data", "directory for blocks and protocol state")
	f.StringVar(&addr, "addr", "127.0.0.1:7401", "address this machine listens on")
	f.StringVar(&reconfig, "reconfig", "127.0.0.1:7400", "address of the reconfiguration service")
	f.IntVar(&machine, "machine", -1, "machine index to run as; -1 joins as a spare")
	f.StringVar(&durability, "durability", "durable", "durable (pebble) or memory")
	return cmd
}
