package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/internal/layoutflag"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/runtime/cluster"
	"github.com/spf13/cobra"
)

type devFlags struct {
	dataDir    string
	addr       string
	lf         layoutflag.Flags
	durability string
	spares     int
	replicas   int
	suspect    time.Duration
	rebuild    string
	protocol   string
	common     commonFlags
}

func newDevCmd() *cobra.Command {
	var fl devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a complete local cluster in one process",
		Long: `dev runs a complete local cluster in one process: the reconfiguration
service at --addr (--reconfig-replicas Raft replicas, the others on ports
after the spares'), --machines machines (each hosting a data, a parity and a
witness server), machine m on port P+1+m where P is --addr's port, and
--spares spare machines on the ports after them. Clients reach it at --addr;
data lives under --data-dir and survives restarts (with --durability
durable, the default). A machine that stops sending heartbeats for
--suspect-after is replaced by a spare. Ctrl-C stops it cleanly.

--protocol shardedpaxos or rspaxos runs a baseline instead (docs/baselines.md):
one Paxos group per shard of the same layout (--machines groups, f from
--f), on max(machines, replicas per group) machines, with no
reconfiguration service. Clients and amalgam-cli work unchanged. A
baseline runs in memory unless --durability durable is given: then its
replicas sync their state to pebble stores under --data-dir before any
message leaves, and restart from them.

--mutant NAME injects a bug of the checker's mutant table into every server
of the cluster, so that amalgam-cli mc online (given the same --mutant) has
a live bug to predict; only binaries built with -tags mutants carry them.

Examples:
  amalgam-server dev --durability memory
  amalgam-server dev --protocol shardedpaxos --durability durable --data-dir /tmp/sp-data
  go build -tags mutants -o /tmp/amalgam-server ./cmd/amalgam-server
  /tmp/amalgam-server dev --durability memory --blocks 9 --block-size 64 --mutant commit-out-of-order`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := fl.baselineFlags(cmd); err != nil {
				return cmdError(cmd, err)
			}
			l, err := fl.layout()
			if err != nil {
				return cmdError(cmd, err)
			}
			if fl.protocol != runtime.Amalgam && fl.common.mutant.name != "" {
				return cmdError(cmd, fmt.Errorf("--mutant runs with --protocol amalgam only"))
			}
			if err := fl.common.mutant.set(); err != nil {
				return cmdError(cmd, err)
			}
			if fl.protocol != runtime.Amalgam {
				return cmdError(cmd, runBaselineDev(cmd, fl, l))
			}
			return cmdError(cmd, runDev(cmd, fl, l))
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.dataDir, "data-dir", "./amalgam-data", "directory for blocks and protocol state")
	f.StringVar(&fl.addr, "addr", "127.0.0.1:7400", "entry address clients connect to")
	fl.lf.Register(f, true)
	f.StringVar(&fl.durability, "durability", "durable", "durable (pebble, fsync before replying) or memory")
	f.IntVar(&fl.spares, "spares", 0, "spare machines that replace failed ones")
	f.IntVar(&fl.replicas, "reconfig-replicas", 1, "replicas of the reconfiguration service (1, 3 or 5)")
	f.DurationVar(&fl.suspect, "suspect-after", 3*time.Second, "replace a machine silent this long by a spare (0: never)")
	f.StringVar(&fl.rebuild, "rebuild-rate", "0", rebuildRateUsage)
	f.StringVar(&fl.protocol, "protocol", "amalgam", "amalgam, shardedpaxos or rspaxos")
	fl.common.register(cmd)
	return cmd
}

// layout validates the flags and returns the stripe layout they describe.
func (fl devFlags) layout() (erasure.Layout, error) {
	if fl.dataDir == "" {
		return erasure.Layout{}, fmt.Errorf("--data-dir must not be empty")
	}
	if _, _, err := net.SplitHostPort(fl.addr); err != nil {
		return erasure.Layout{}, fmt.Errorf("--addr %q: %v", fl.addr, err)
	}
	if err := checkDurability(fl.durability); err != nil {
		return erasure.Layout{}, err
	}
	if fl.spares < 0 {
		return erasure.Layout{}, fmt.Errorf("--spares must not be negative, got %d", fl.spares)
	}
	if fl.replicas < 1 || fl.replicas > 7 {
		return erasure.Layout{}, fmt.Errorf("--reconfig-replicas must be between 1 and 7 (1, 3 or 5 make sense), got %d", fl.replicas)
	}
	if fl.suspect < 0 {
		return erasure.Layout{}, fmt.Errorf("--suspect-after must not be negative, got %v", fl.suspect)
	}
	if _, err := rebuildPause(fl.rebuild, 1); err != nil {
		return erasure.Layout{}, err
	}
	return serverLayout(fl.lf)
}

// serverLayout is the layout the flags describe, in blocks of at most 16 MiB.
func serverLayout(fl layoutflag.Flags) (erasure.Layout, error) {
	if fl.BlockSize > 16<<20 {
		return erasure.Layout{}, fmt.Errorf("--block-size must be at most 16 MiB, got %d", fl.BlockSize)
	}
	return fl.Layout()
}

func printDevPlan(w io.Writer, fl devFlags, l erasure.Layout) {
	fmt.Fprintf(w, "layout: n=%d g=%d f=%d w=%d, %d stripes, %d blocks of %d bytes, storage overhead f/g=%.2f\n",
		l.N, l.G, l.F, l.W, l.Stripes, l.NumBlocks(), l.BlockSize, float64(l.F)/float64(l.G))
	fmt.Fprintf(w, "durability %s, data under %s\n", fl.durability, fl.dataDir)
}

// checkDataDir records the layout in dir/cluster.json on first use and
// refuses to start a different layout on the same directory, or Amalgam
// (protocol) on a baseline's directory (checkProtocol).
func checkDataDir(dir string, l erasure.Layout, durability, protocol string) error {
	if durability == "memory" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "protocol")); err == nil && protocol == runtime.Amalgam {
		p := strings.TrimSpace(string(b))
		return fmt.Errorf("--data-dir %s holds a %s cluster; start it with --protocol %s or use another --data-dir", dir, p, p)
	}
	p := filepath.Join(dir, "cluster.json")
	want, _ := json.Marshal(l)
	got, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return writeFileDurably(p, want)
	}
	if err != nil {
		return err
	}
	var old erasure.Layout
	if err := json.Unmarshal(got, &old); err != nil {
		return fmt.Errorf("%s: %v", p, err)
	}
	if old != l {
		return fmt.Errorf("--data-dir %s holds a cluster with n=%d g=%d f=%d w=%d, %d stripes of %d-byte blocks; start it with the same flags or use another --data-dir",
			dir, old.N, old.G, old.F, old.W, old.Stripes, old.BlockSize)
	}
	return nil
}

func runDev(cmd *cobra.Command, fl devFlags, l erasure.Layout) error {
	if err := checkDataDir(fl.dataDir, l, fl.durability, runtime.Amalgam); err != nil {
		return err
	}
	pause, err := rebuildPause(fl.rebuild, l.BlockSize)
	if err != nil {
		return err
	}
	env, ctx, err := fl.common.setup(cmd, l.BlockSize)
	if err != nil {
		return err
	}
	defer env.close()
	lc, err := cluster.Start(cluster.Options{Layout: l, Durability: fl.durability, DataDir: fl.dataDir, Addr: fl.addr,
		Replicas: fl.replicas, Spares: fl.spares, SuspectAfter: fl.suspect, RebuildPause: pause,
		Logger: env.log, ServerOptions: env.serverOpts, DialOptions: env.dialOpts, Register: env.register, Metrics: env.metrics})
	if err != nil {
		return err
	}
	env.metrics.nodes.watch(append(append([]*runtime.Machine(nil), lc.Machines...), lc.Spares...)...)
	env.ready.track(ctx, time.Second, lc.Machines...)
	env.steerMachines(append(append([]*runtime.Machine(nil), lc.Machines...), lc.Spares...)...)
	if err := waitSpares(ctx, lc.Entries, env, fl.spares); err != nil {
		lc.Close()
		return err
	}
	out := cmd.OutOrStdout()
	printDevPlan(out, fl, l)
	for r, a := range lc.ReplicaAddrs {
		fmt.Fprintf(out, "reconfiguration replica %d at %s\n", r+1, a)
	}
	for m, a := range lc.MachineAddrs {
		fmt.Fprintf(out, "machine %d: data/%d parity/%d witness/%d at %s\n", m, m, m, m, a)
	}
	for i, a := range lc.SpareAddrs {
		fmt.Fprintf(out, "spare %d at %s\n", i, a)
	}
	if len(lc.ReplicaAddrs) > 1 {
		fmt.Fprintf(out, "entry addresses (any replica): %s\n", lc.Entries)
	}
	serveUntilStopped(ctx, out, env, "amalgam", lc.EntryAddr, lc.Close)
	return nil
}

// waitSpares waits until the reconfiguration service lists n spares, so
// that dev says ready only once a failed machine can be replaced.
func waitSpares(ctx context.Context, entries string, env *serverEnv, n int) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, entries, client.Options{DialOptions: env.dialOpts, DialTimeout: 10 * time.Second})
	if err != nil {
		return fmt.Errorf("waiting for the spares to register: %w", err)
	}
	defer c.Close()
	for {
		st, err := c.Status(ctx)
		if err == nil && len(st.GetSpares()) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("only %d of %d spares registered with the reconfiguration service within 30s", len(st.GetSpares()), n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serveUntilStopped says a dev cluster is ready, waits for Ctrl-C (ctx)
// and stops it with stop.
func serveUntilStopped(ctx context.Context, out io.Writer, env *serverEnv, protocol, entry string, stop func()) {
	if env.metricsAddr != "" {
		fmt.Fprintf(out, "metrics at http://%s/metrics\n", env.metricsAddr)
	}
	fmt.Fprintf(out, "%s dev cluster ready at %s\n", protocol, entry)
	fmt.Fprintf(out, "try: go run ./cmd/amalgam-cli --cluster %s status   (Ctrl-C stops the cluster)\n", entry)
	<-ctx.Done()
	fmt.Fprintln(out, "stopping")
	stop()
	fmt.Fprintln(out, "stopped")
}

// writeFileDurably writes path whole or not at all, and durably: a
// synced temporary file renamed over it, then the directory synced. A
// crash while a data directory's first start records it must not leave an
// empty record that refuses the next start.
func writeFileDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone already after the rename
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644) // as os.WriteFile would leave it
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
