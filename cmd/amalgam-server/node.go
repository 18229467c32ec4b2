package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

func newNodeCmd() *cobra.Command {
	var (
		dataDir, addr, reconfig, durability string
		rebuildRate                         string
		machine                             int
		spare                               bool
		heartbeat, joinTimeout              time.Duration
		common                              commonFlags
	)
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run one machine: its data, parity and witness servers",
		Long: `node runs one machine of a cluster: its data, parity and witness servers.
It learns the layout and every machine's address from the reconfiguration
service at --reconfig (its replicas, comma-separated; waiting up to
--join-timeout for it to answer), and listens on --addr. Each node needs its
own --data-dir. Restarted on the same --data-dir, it restores its
servers and streams. It heartbeats the reconfiguration service every
--heartbeat and follows its address book.

With --spare (or --machine -1) it joins as a spare: it registers with the
reconfiguration service and waits; when a failed machine is replaced, the
service gives the spare its slot and the spare starts the slot's new
servers, which rebuild their blocks. A machine whose slot was given to a
spare stops (restart it with --spare and an empty --data-dir to rejoin).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := nonEmpty(cmd, "addr", "reconfig"); err != nil {
				return err
			}
			switch {
			case machine < -1:
				return cmdError(cmd, fmt.Errorf("--machine must be -1 (spare) or a machine index, got %d", machine))
			case spare && machine >= 0:
				return cmdError(cmd, fmt.Errorf("--spare and --machine %d: a spare has no machine index until it is given one", machine))
			case heartbeat <= 0:
				return cmdError(cmd, fmt.Errorf("--heartbeat must be positive, got %v", heartbeat))
			case joinTimeout <= 0:
				return cmdError(cmd, fmt.Errorf("--join-timeout must be positive, got %v", joinTimeout))
			case dataDir == "":
				return cmdError(cmd, fmt.Errorf("--data-dir is required: each node keeps its blocks in its own directory"))
			}
			if spare {
				machine = -1
			}
			if _, err := rebuildPause(rebuildRate, 1); err != nil {
				return cmdError(cmd, err)
			}
			if err := checkDurability(durability); err != nil {
				return cmdError(cmd, err)
			}
			return cmdError(cmd, runNode(cmd, &common, dataDir, addr, reconfig, durability, rebuildRate, machine, heartbeat, joinTimeout))
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "directory for this node's blocks and protocol state (required)")
	f.StringVar(&addr, "addr", "127.0.0.1:7401", "address this machine listens on")
	f.StringVar(&reconfig, "reconfig", "127.0.0.1:7400", "addresses of the reconfiguration service's replicas, comma-separated")
	f.IntVar(&machine, "machine", -1, "machine index to run as; -1 joins as a spare")
	f.BoolVar(&spare, "spare", false, "join as a spare (same as --machine -1)")
	f.DurationVar(&joinTimeout, "join-timeout", 30*time.Second, "give up if the reconfiguration service does not answer within this long")
	f.DurationVar(&heartbeat, "heartbeat", 200*time.Millisecond, "how often to tell the reconfiguration service this machine is alive")
	f.StringVar(&durability, "durability", "durable", "durable (pebble, fsync before replying) or memory")
	f.StringVar(&rebuildRate, "rebuild-rate", "0", rebuildRateUsage)
	common.register(cmd)
	return cmd
}

func runNode(cmd *cobra.Command, common *commonFlags, dataDir, addr, reconfig, durability, rebuildRate string, me int, heartbeat, joinTimeout time.Duration) error {
	env, ctx, err := common.setup(cmd, 1<<20)
	if err != nil {
		return err
	}
	defer env.close()
	jctx, cancel := context.WithTimeout(ctx, joinTimeout)
	st, err := fetchStatus(jctx, env.log, reconfig, env.dialOpts)
	cancel()
	if err != nil && ctx.Err() == nil && jctx.Err() != nil {
		return fmt.Errorf("the reconfiguration service at --reconfig %s did not answer within --join-timeout %v: %w", reconfig, joinTimeout, err)
	}
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
	if err := checkDataDir(dataDir, l, durability, runtime.Amalgam); err != nil {
		return err
	}
	pause, err := rebuildPause(rebuildRate, l.BlockSize)
	if err != nil {
		return err
	}
	cl := &runtime.Cluster{Config: msg.InitialConfig(l), Durability: durability}
	for _, a := range strings.Split(reconfig, ",") {
		cl.Reconfig = append(cl.Reconfig, strings.TrimSpace(a))
	}
	for _, m := range st.GetMachines() {
		cl.Machines = append(cl.Machines, m.GetAddr())
	}
	self := addr // how peers reach this host: the address book's name for it when the port matches
	if me >= 0 {
		if _, cport, _ := net.SplitHostPort(cl.Machines[me]); strings.HasSuffix(addr, ":"+cport) {
			self = cl.Machines[me]
		} else {
			return fmt.Errorf("--machine %d: the reconfiguration service says %s serves machine %d, not --addr %s (was this machine replaced by a spare? restart it with --spare and an empty --data-dir)",
				me, cl.Machines[me], me, addr)
		}
	}
	ctx, evicted := context.WithCancelCause(ctx)
	defer evicted(nil)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	code, err := erasure.NewCode(l.G, l.F)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	mc, err := runtime.StartMachine(cl, me, code, runtime.MachineOptions{Listener: ln, Dir: dataDir, Logger: env.log,
		ServerOptions: env.serverOpts, DialOptions: env.dialOpts, Register: env.register, Metrics: env.metrics,
		Joining: me < 0, Self: self, HeartbeatEvery: heartbeat, RebuildPause: pause,
		OnAssigned: func(m int) {
			fmt.Fprintf(out, "spare now serves machine %d (data/%d parity/%d witness/%d) at %s\n", m, m, m, m, self)
		},
		OnEvicted: func(m int, host string) {
			evicted(fmt.Errorf("machine %d was replaced: %s serves it now", m, host))
		}})
	if err != nil {
		_ = ln.Close()
		return err
	}
	env.steerMachines(mc)
	env.metrics.nodes.watch(mc)
	env.ready.track(ctx, time.Second, mc)
	if env.metricsAddr != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "metrics at http://%s/metrics\n", env.metricsAddr)
	}
	if me < 0 {
		fmt.Fprintf(out, "spare serving at %s, durability %s, waiting for a machine slot\n", ln.Addr(), durability)
	} else {
		fmt.Fprintf(out, "machine %d (data/%d parity/%d witness/%d) serving at %s, durability %s\n", me, me, me, me, ln.Addr(), durability)
	}
	<-ctx.Done()
	mc.Close()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err // replaced
	}
	return nil
}

// fetchStatus asks the reconfiguration service for the configuration,
// retrying until it answers or ctx ends.
func fetchStatus(ctx context.Context, log *slog.Logger, addr string, dialOpts []grpc.DialOption) (*wire.StatusResponse, error) {
	opts := append(wire.DialOptions(1<<20), grpc.WithTransportCredentials(insecure.NewCredentials()))
	var ccs []*grpc.ClientConn
	for _, a := range strings.Split(addr, ",") {
		cc, err := grpc.NewClient(strings.TrimSpace(a), append(opts, dialOpts...)...)
		if err != nil {
			return nil, fmt.Errorf("--reconfig %s: %w", a, err)
		}
		defer cc.Close()
		ccs = append(ccs, cc)
	}
	for try := 0; ; try++ {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := wire.NewClientClient(ccs[try%len(ccs)]).Status(actx, &wire.StatusRequest{}, grpc.WaitForReady(len(ccs) == 1))
		cancel()
		if err == nil {
			return st, nil
		}
		if try == 0 {
			log.Info("waiting for the reconfiguration service", "reconfig", addr, "err", err)
		}
		select {
		case <-ctx.Done():
			if c := client.Cause(err); c != "" {
				return nil, errors.New(c)
			}
			return nil, fmt.Errorf("last error: %v", status.Convert(err).Message())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
