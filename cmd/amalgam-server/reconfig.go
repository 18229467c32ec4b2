package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

func newReconfigCmd() *cobra.Command {
	var (
		dataDir, addr              string
		id                         uint64
		peers, machineAddrs        []string
		g, f, w, blockSize, blocks int
		durability                 string
		common                     commonFlags
	)
	cmd := &cobra.Command{
		Use:   "reconfig",
		Short: "Run one replica of the reconfiguration service",
		Long: `reconfig runs one replica of the reconfiguration service, which tells
clients and machines the cluster's configuration (layout and machine
addresses) and will replace failed servers.

For now the service is static: it serves configuration 0, built from
--machine-addrs and the layout flags, and does not replicate or replace
anything (--peers is accepted for the Raft version to come).`,
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
			if err := checkDurability(durability); err != nil {
				return cmdError(cmd, err)
			}
			if len(machineAddrs) == 0 {
				return cmdError(cmd, fmt.Errorf("--machine-addrs must list every machine's host:port"))
			}
			for i, a := range machineAddrs {
				if _, _, err := net.SplitHostPort(a); err != nil {
					return cmdError(cmd, fmt.Errorf("--machine-addrs entry %d %q: %v", i, a, err))
				}
			}
			l, err := layoutFromFlags(len(machineAddrs), g, f, w, blockSize, blocks)
			if err != nil {
				return cmdError(cmd, err)
			}
			env, err := common.setup(cmd, l.BlockSize)
			if err != nil {
				return cmdError(cmd, err)
			}
			defer env.close()
			cl := &runtime.Cluster{Config: msg.InitialConfig(l), Machines: machineAddrs, Durability: durability}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return cmdError(cmd, err)
			}
			s := grpc.NewServer(append(wire.ServerOptions(l.BlockSize), env.serverOpts...)...)
			wire.RegisterClientServer(s, &runtime.StatusServer{Cluster: cl})
			env.register(s)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() { <-ctx.Done(); s.Stop() }()
			fmt.Fprintf(cmd.OutOrStdout(), "reconfiguration service (static configuration 0, %d machines) at %s\n", l.N, ln.Addr())
			if err := s.Serve(ln); err != nil {
				return cmdError(cmd, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dataDir, "data-dir", "./amalgam-reconfig", "directory for the Raft log and state")
	fl.StringVar(&addr, "addr", "127.0.0.1:7400", "address this replica listens on")
	fl.Uint64Var(&id, "id", 1, "Raft replica ID (at least 1)")
	fl.StringSliceVar(&peers, "peers", nil, "other replicas as id=host:port, comma-separated")
	fl.StringSliceVar(&machineAddrs, "machine-addrs", nil, "host:port of machine 0, 1, ... (comma-separated); their number is n")
	fl.IntVar(&g, "g", 3, "data blocks per stripe")
	fl.IntVar(&f, "f", 2, "parity blocks per stripe")
	fl.IntVar(&w, "w", 0, "witnesses per stripe")
	fl.IntVar(&blockSize, "block-size", 4096, "bytes per block")
	fl.IntVar(&blocks, "blocks", 1024, "number of addressable blocks (rounded up to whole stripes)")
	fl.StringVar(&durability, "durability", "durable", "durability the machines run with (reported by status)")
	common.register(cmd)
	return cmd
}
