package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func newReconfigCmd() *cobra.Command {
	var (
		dataDir, addr string
		id            uint64
		peers         []string
	)
	cmd := &cobra.Command{
		Use:   "reconfig",
		Short: "Run one replica of the Raft-replicated reconfiguration service",
		Long: `reconfig runs one replica of the reconfiguration service, which replaces
failed servers. Replicas replicate their inputs with Raft.

Not built yet: reconfig validates its flags and exits with status 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case dataDir == "":
				return cmdError(cmd, fmt.Errorf("--data-dir must not be empty"))
			case addr == "":
				return cmdError(cmd, fmt.Errorf("--addr must not be empty"))
			case id == 0:
				return cmdError(cmd, fmt.Errorf("--id must be at least 1 (Raft reserves 0)"))
			}
			for _, p := range peers {
				pid, paddr, ok := strings.Cut(p, "=")
				if n, err := strconv.ParseUint(pid, 10, 64); !ok || err != nil || n == 0 || paddr == "" {
					return cmdError(cmd, fmt.Errorf("--peers entry %q is not id=host:port with id at least 1", p))
				}
			}
			return cmdError(cmd, errNotBuilt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "./amalgam-reconfig", "directory for the Raft log and state")
	f.StringVar(&addr, "addr", "127.0.0.1:7400", "address this replica listens on")
	f.Uint64Var(&id, "id", 1, "Raft replica ID (at least 1)")
	f.StringSliceVar(&peers, "peers", nil, "other replicas as id=host:port, comma-separated")
	return cmd
}
