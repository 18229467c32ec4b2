// amalgam-bench's subcommands: vs-etcd and recovery, which run separate
// server processes built from the source tree.

package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/bench/harness"
	"github.com/amalgam-store/amalgam/internal/layoutflag"
)

// newVsEtcdCmd is amalgam-bench vs-etcd: durable Amalgam against stock etcd
// clusters, as separate server processes, alternated round by round.
func newVsEtcdCmd() *cobra.Command {
	var o harness.VsEtcdOptions
	cmd := &cobra.Command{
		Use:   "vs-etcd",
		Short: "Durable Amalgam (amalgam-server dev) against etcd clusters (and durable ShardedPaxos, RSPaxos), alternated",
		Long: `vs-etcd builds amalgam-server and amalgam-etcd (the nested Go module bench/etcd)
from the source tree (--src, default: the one around the working directory),
then in every round starts, loads and stops each system in turn: Amalgam
(amalgam-server dev --durability durable, n=5 g=3 f=2, one process) and stock
etcd clusters (--members, default 3 and 5 member processes). Every system gets
the same closed-loop generator (amalgam-etcd load: bench/loadgen) on the same
workloads: ` + strings.Join(vsNames(), ", ") + `
(workload-blocksize-clients; add is a read-modify-write increment).
It reports ops/s, MB/s, latency, the servers' CPU per operation, their fsync
and fdatasync calls per operation (perf stat; etcd's own sync metrics beside
them), bytes written to disk per logical byte (the servers' /proc/<pid>/io, and
the data directory's block device), and Amalgam's per-round ratio to each
other system as a median with its min-max spread.

--systems picks the systems and their order within a round: amalgam,
shardedpaxos (durable ShardedPaxos, amalgam-server dev --protocol
shardedpaxos --durability durable: 5 Paxos groups of 3 replicas and 2
witnesses, f=2, on 5 machines, in one process), rspaxos (durable RSPaxos,
--protocol rspaxos: 5 groups of 7 members, each holding one of 3 data and
4 parity pieces of a block, on 7 machines, in one process) and etcdN (N
members); the default is amalgam and etcdN for every --members N. With
shardedpaxos or rspaxos the report adds its per-round ratio to each etcd
cluster. rspaxos runs the write workloads only: its add is a GET then a
PUT without isolation, not the others' operation, so its add cells are
skipped and listed under the table (with only add workloads it is refused).
See docs/benchmarks.md.

Examples:
  amalgam-cli bench vs-etcd --members 3 --workloads write-4KiB-1,add-4KiB-32
  amalgam-cli bench vs-etcd --rounds 2 --duration 5s --workloads write-4KiB-32,add-4KiB-32 \
    --systems amalgam,etcd3,shardedpaxos
  amalgam-cli bench vs-etcd --systems amalgam,shardedpaxos,rspaxos,etcd3`,
	}
	f := reportCmd(cmd, []string{"text", "json", "markdown"}, "also draw the ratios into DIR/vs-etcd.svg",
		func(progress func(string)) (*harness.VsReport, error) {
			o.Progress = progress
			return harness.VsEtcd(o)
		},
		func(rep *harness.VsReport, dir string) error { _, err := rep.Plot(dir); return err })
	f.IntVar(&o.Rounds, "rounds", 3, "rounds; every round runs every system once")
	f.DurationVar(&o.Warmup, "warmup", 0, "warm-up before each measured run (default 15s: fresh servers are slow for their first seconds)")
	f.DurationVar(&o.Duration, "duration", 0, "measured interval of each run (default 5s)")
	f.Uint64Var(&o.Seed, "seed", 1, "workload seed")
	f.IntSliceVar(&o.Members, "members", []int{3, 5}, "etcd cluster sizes (without --systems)")
	f.StringSliceVar(&o.Systems, "systems", nil, "systems in the order each round runs them: amalgam, shardedpaxos, rspaxos (write workloads only), etcdN (default amalgam and etcdN for every --members N)")
	f.StringSliceVar(&o.Workloads, "workloads", nil, "run only these workloads (default all: "+strings.Join(vsNames(), ",")+")")
	f.StringVar(&o.Src, "src", ".", "Amalgam source tree to build the servers from (or a directory inside it)")
	f.Int64Var(&o.MinOps, "min-ops", 0, "measure past --duration until this many operations completed")
	f.BoolVar(&o.NoPerf, "no-perf", false, "do not run the servers under perf stat (which counts their fsync and fdatasync calls)")
	return cmd
}

func vsNames() []string {
	var out []string
	for _, w := range harness.VsWorkloads {
		out = append(out, w.Name())
	}
	return out
}

// newRecoveryCmd is amalgam-bench recovery: client throughput over time
// through a machine's failure, detection, replacement and rebuild.
func newRecoveryCmd() *cobra.Command {
	var o harness.RecoveryOptions
	cmd := &cobra.Command{
		Use:   "recovery",
		Short: "Client throughput over time through a machine's SIGKILL, its replacement and rebuild (durable, separate processes)",
		Long: `recovery builds amalgam-server from the source tree (--src), starts a durable
cluster of separate processes on loopback (a reconfiguration service, --n
machines and a spare; g=--g, f=--f), writes every block once, then runs
--clients closed-loop clients writing whole random blocks for --duration.
--kill-after into the load it SIGKILLs machine --victim. The failure
detector (--suspect-after) moves the machine's slot to the spare, its
servers are replaced and rebuild their blocks while the clients keep
writing.

It records the writes that complete in each --bucket (ops/s, MB/s, p99
latency) and the events: kill; moved to spare (the reconfiguration
service's history names the spare in the victim's slot); replaced (the
newest configuration is not busy); healthy (every server answers in it with
no block left to rebuild). Events are polled every 100 ms. It prints the
events, the throughput between them against the throughput before the kill,
and the buckets; --output json prints the same for scripts; --plot DIR
draws DIR/recovery-<size>.svg (MB/s) and DIR/recovery-<size>-p99.svg with
the events marked. Progress goes to stderr. See docs/benchmarks.md.

The baselines (ShardedPaxos, RSPaxos) run in one process and in memory
only, and replace no replica, so this command measures Amalgam alone.`,
		Example: `  amalgam-cli bench recovery
  amalgam-cli bench recovery --block-size 65536 --mib-per-machine 16 --plot docs/bench/recovery
  amalgam-cli bench recovery --rebuild-rate 2MB/s --duration 2m --output json`,
	}
	f := reportCmd(cmd, []string{"text", "json"}, "also draw SVG plots into this directory",
		func(progress func(string)) (*harness.RecoveryReport, error) {
			if err := o.Validate(); err != nil {
				return nil, err
			}
			o.Progress = progress
			return harness.Recovery(o)
		},
		func(rep *harness.RecoveryReport, dir string) error {
			files, err := rep.Plot(dir)
			if err == nil && o.Progress != nil {
				o.Progress(fmt.Sprintf("plots: %s", strings.Join(files, ", ")))
			}
			return err
		})
	f.IntVar(&o.N, "n", 6, "machines (a spare is added)")
	layoutflag.Stripe(f, &o.G, &o.F, &o.BlockSize)
	f.Float64Var(&o.MiBPerMachine, "mib-per-machine", 2, "MiB of blocks (data and parity) each machine holds; sets the number of stripes")
	f.IntVar(&o.Clients, "clients", 8, "closed-loop clients writing whole random blocks")
	f.DurationVar(&o.KillAfter, "kill-after", 10*time.Second, "when into the load to SIGKILL the victim")
	f.DurationVar(&o.Duration, "duration", 90*time.Second, "length of the whole load")
	f.DurationVar(&o.Bucket, "bucket", 250*time.Millisecond, "width of a time bucket")
	f.DurationVar(&o.SuspectAfter, "suspect-after", 1500*time.Millisecond, "the failure detector's silence before it suspects a machine")
	f.StringVar(&o.RebuildRate, "rebuild-rate", "", "passed to every node's --rebuild-rate (default: the server's)")
	f.IntVar(&o.Victim, "victim", 1, "the machine killed")
	f.Uint64Var(&o.Seed, "seed", 1, "workload seed")
	f.StringVar(&o.Src, "src", ".", "Amalgam source tree to build amalgam-server from (or a directory inside it)")
	return cmd
}
