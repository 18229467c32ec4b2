package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/bench/harness"
)

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
	f.IntVar(&o.G, "g", 3, "data blocks per stripe")
	f.IntVar(&o.F, "f", 2, "parity blocks per stripe")
	f.IntVar(&o.BlockSize, "block-size", 4096, "bytes per block")
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
