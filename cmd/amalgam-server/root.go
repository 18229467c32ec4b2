package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/internal/buildinfo"
)

func newRootCmd() *cobra.Command {
	var configFile string
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
spare machines (amalgam-server node --spare). See docs/reconfiguration.md.

Every flag can also come from an AMALGAM_* environment variable (--data-dir:
AMALGAM_DATA_DIR) or a YAML --config file whose keys are flag names;
flags win over the environment, the environment over the file.

Examples:
  amalgam-server dev
  amalgam-server --config amalgam.yaml node --machine 0
  AMALGAM_LOG_FORMAT=json amalgam-server reconfig --machine-addrs ...
  amalgam-server version`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applySettings(cmd, configFile)
		},
	}
	root.PersistentFlags().StringVar(&configFile, "config", os.Getenv("AMALGAM_CONFIG"),
		"YAML file of settings whose keys are flag names (env AMALGAM_CONFIG); flags > AMALGAM_* env > file > defaults")
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newDevCmd(), newNodeCmd(), newReconfigCmd(), newNBDCmd(), buildinfo.Command("amalgam-server", nil))
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
// nonEmpty returns cmd's error for the first of the named string flags
// that is empty.
func nonEmpty(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if cmd.Flags().Lookup(n).Value.String() == "" {
			return cmdError(cmd, fmt.Errorf("--%s must not be empty", n))
		}
	}
	return nil
}

func cmdError(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", cmd.Name(), err)
}
