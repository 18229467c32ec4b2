package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

func newNodeCmd() *cobra.Command {
	var (
		dataDir, addr, reconfig, durability string
		machine                             int
		common                              commonFlags
	)
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run one machine: its data, parity and witness servers",
		Long: `node runs one machine of a cluster: its data, parity and witness servers.
It learns the layout and every machine's address from the reconfiguration
service at --reconfig (waiting for it to come up), and listens on --addr.
Restarted on the same --data-dir, it restores its servers and streams.`,
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
			case machine == -1:
				return cmdError(cmd, fmt.Errorf("--machine: spares need the reconfiguration service, which is not built yet; give a machine index"))
			}
			if err := checkDurability(durability); err != nil {
				return cmdError(cmd, err)
			}
			return cmdError(cmd, runNode(cmd, &common, dataDir, addr, reconfig, durability, machine))
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "./amalgam-data", "directory for blocks and protocol state")
	f.StringVar(&addr, "addr", "127.0.0.1:7401", "address this machine listens on")
	f.StringVar(&reconfig, "reconfig", "127.0.0.1:7400", "address of the reconfiguration service")
	f.IntVar(&machine, "machine", -1, "machine index to run as; -1 joins as a spare")
	f.StringVar(&durability, "durability", "durable", "durable (pebble, fsync before replying) or memory")
	common.register(cmd)
	return cmd
}

func runNode(cmd *cobra.Command, common *commonFlags, dataDir, addr, reconfig, durability string, me int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := common.setup(cmd, 1<<20)
	if err != nil {
		return err
	}
	defer env.close()
	st, err := fetchStatus(ctx, env.log, reconfig, env.dialOpts)
	if err != nil {
		return err
	}
	l, err := runtime.LayoutFromProto(st.GetLayout())
	if err != nil {
		return fmt.Errorf("--reconfig sent a bad layout: %w", err)
	}
	if me >= l.N || len(st.GetMachines()) != l.N {
		return fmt.Errorf("--machine %d: the cluster has machines 0 to %d", me, l.N-1)
	}
	if err := checkDataDir(dataDir, l, durability); err != nil {
		return err
	}
	cl := &runtime.Cluster{Config: msg.InitialConfig(l), Durability: durability}
	for _, m := range st.GetMachines() {
		cl.Machines = append(cl.Machines, m.GetAddr())
	}
	if _, cport, _ := net.SplitHostPort(cl.Machines[me]); !strings.HasSuffix(addr, ":"+cport) {
		env.log.Warn("--addr differs from the address the configuration gives this machine; peers and clients use the configured one",
			"addr", addr, "configured", cl.Machines[me])
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	code, err := erasure.NewCode(l.G, l.F)
	if err != nil {
		return err
	}
	mc, err := runtime.StartMachine(cl, me, code, runtime.MachineOptions{Listener: ln, Dir: dataDir, Logger: env.log,
		ServerOptions: env.serverOpts, DialOptions: env.dialOpts, Register: env.register, Metrics: env.metrics})
	if err != nil {
		_ = ln.Close()
		return err
	}
	env.metrics.nodes.watch(mc)
	if env.metricsAddr != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "metrics at http://%s/metrics\n", env.metricsAddr)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "machine %d (data/%d parity/%d witness/%d) serving at %s, durability %s\n", me, me, me, me, ln.Addr(), durability)
	<-ctx.Done()
	mc.Close()
	return nil
}

// fetchStatus asks the reconfiguration service for the configuration,
// retrying until it answers or ctx ends.
func fetchStatus(ctx context.Context, log *slog.Logger, addr string, dialOpts []grpc.DialOption) (*wire.StatusResponse, error) {
	opts := append(wire.DialOptions(1<<20), grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient(addr, append(opts, dialOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("--reconfig %s: %w", addr, err)
	}
	defer cc.Close()
	for try := 0; ; try++ {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := wire.NewClientClient(cc).Status(actx, &wire.StatusRequest{}, grpc.WaitForReady(true))
		cancel()
		if err == nil {
			return st, nil
		}
		if try == 0 {
			log.Info("waiting for the reconfiguration service", "reconfig", addr, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("--reconfig %s did not answer: %v", addr, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
