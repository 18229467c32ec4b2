package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/bench/harness"
)

// newVsEtcdCmd is amalgam-bench vs-etcd: durable Amalgam against stock etcd
// clusters, as separate server processes, alternated round by round.
func newVsEtcdCmd() *cobra.Command {
	var o harness.VsEtcdOptions
	cmd := &cobra.Command{
		Use:   "vs-etcd",
		Short: "Durable Amalgam (amalgam-server dev) against 3- and 5-member etcd clusters, alternated",
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
them), bytes written to disk per logical byte (/proc/<pid>/io), and Amalgam's
per-round ratio to each etcd cluster as a median with its min-max spread.
See docs/benchmarks.md.`,
	}
	f := reportCmd(cmd, []string{"text", "json", "markdown"}, "also draw the ratios into DIR/vs-etcd.svg",
		func(progress func(string)) (*harness.VsReport, error) {
			o.Progress = progress
			return harness.VsEtcd(o)
		},
		func(rep *harness.VsReport, dir string) error { _, err := rep.Plot(dir); return err })
	f.IntVar(&o.Rounds, "rounds", 3, "rounds; every round runs every system once")
	f.DurationVar(&o.Warmup, "warmup", 0, "warm-up before each measured run (default 1s)")
	f.DurationVar(&o.Duration, "duration", 0, "measured interval of each run (default 5s)")
	f.Uint64Var(&o.Seed, "seed", 1, "workload seed")
	f.IntSliceVar(&o.Members, "members", []int{3, 5}, "etcd cluster sizes")
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
