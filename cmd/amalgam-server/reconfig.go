package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/internal/layoutflag"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/runtime/raftreconfig"
)

func newReconfigCmd() *cobra.Command {
	var (
		dataDir, addr       string
		id                  uint64
		peers, machineAddrs []string
		layout              layoutflag.Flags
		durability          string
		suspect             time.Duration
		snapEvery           uint64
		common              commonFlags
	)
	cmd := &cobra.Command{
		Use:   "reconfig",
		Short: "Run one replica of the reconfiguration service",
		Long: `reconfig runs one replica of the reconfiguration service, which numbers the
cluster's configurations, replaces failed servers (thesis 3.3.2) and keeps
the address book: which host serves each machine slot, and the registered
spares. It tells clients and machines the configuration and the address
book (Status, heartbeats).

Run 1, 3 or 5 replicas: --id is this replica's Raft id and --peers lists the
others as id=host:port (all replicas must be given the same layout flags and
--machine-addrs, the initial address book). The Raft log, hard state and
snapshots live in --data-dir. A machine silent for --suspect-after is
replaced by a live spare (amalgam-server node --spare); without a spare it
is left alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := nonEmpty(cmd, "data-dir", "addr"); err != nil {
				return err
			}
			if id == 0 {
				return cmdError(cmd, fmt.Errorf("--id must be at least 1 (Raft reserves 0)"))
			}
			peerMap := map[uint64]string{id: addr}
			for _, p := range peers {
				pid, paddr, ok := strings.Cut(p, "=")
				n, err := strconv.ParseUint(pid, 10, 64)
				if !ok || err != nil || n == 0 || paddr == "" {
					return cmdError(cmd, fmt.Errorf("--peers entry %q is not id=host:port with id at least 1", p))
				}
				if _, dup := peerMap[n]; dup {
					return cmdError(cmd, fmt.Errorf("--peers: id %d appears twice (or is this replica's --id)", n))
				}
				peerMap[n] = paddr
			}
			if suspect < 0 {
				return cmdError(cmd, fmt.Errorf("--suspect-after must not be negative, got %v", suspect))
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
			layout.Machines = len(machineAddrs)
			l, err := serverLayout(layout)
			if err != nil {
				return cmdError(cmd, err)
			}
			env, ctx, err := common.setup(cmd, l.BlockSize)
			if err != nil {
				return cmdError(cmd, err)
			}
			defer env.close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return cmdError(cmd, err)
			}
			r, err := raftreconfig.Start(raftreconfig.Options{ID: id, Peers: peerMap, Listener: ln, Dir: dataDir,
				Initial: raftreconfig.Initial{Config: msg.InitialConfig(l), Hosts: machineAddrs, Durability: durability},
				Logger:  env.log, ServerOptions: env.serverOpts, DialOptions: env.dialOpts, Register: env.register,
				SnapshotEvery: snapEvery, SuspectAfter: suspect})
			if err != nil {
				_ = ln.Close()
				return cmdError(cmd, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reconfiguration service (replica %d of %d, %d machines) at %s\n", id, len(peerMap), l.N, ln.Addr())
			<-ctx.Done()
			r.Close()
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dataDir, "data-dir", "./amalgam-reconfig", "directory for the Raft log and state")
	fl.StringVar(&addr, "addr", "127.0.0.1:7400", "address this replica listens on")
	fl.Uint64Var(&id, "id", 1, "Raft replica ID (at least 1)")
	fl.StringSliceVar(&peers, "peers", nil, "other replicas as id=host:port, comma-separated")
	fl.StringSliceVar(&machineAddrs, "machine-addrs", nil, "host:port of machine 0, 1, ... (comma-separated); their number is n")
	layout.Register(fl, false)
	fl.StringVar(&durability, "durability", "durable", "durability the machines run with (reported by status)")
	fl.DurationVar(&suspect, "suspect-after", 3*time.Second, "replace a machine silent this long by a live spare (0: never)")
	fl.Uint64Var(&snapEvery, "snapshot-every", 1000, "log entries between snapshots of the state (the log is compacted)")
	common.register(cmd)
	return cmd
}
