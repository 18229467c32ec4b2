package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amalgam-store/amalgam/bench/harness"
)

// newRootCmd is amalgam-bench's command; amalgam-cli bench runs it with the
// same arguments.
func newRootCmd() *cobra.Command {
	var (
		output     string
		o          harness.Options
		csvFile    string
		plotDir    string
		noProgress bool
		bandwidth  float64
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:       "amalgam-bench <experiment>...",
		Short:     "Benchmark Amalgam against ShardedPaxos and RSPaxos (offline)",
		ValidArgs: append([]string{"all"}, harness.ExperimentNames()...),
		Long: `amalgam-bench (or amalgam-cli bench) runs the evaluation of thesis 3.6 on this machine: every experiment
runs Amalgam, ShardedPaxos and RSPaxos, one after the other, with
closed-loop clients, a warm-up and a fixed measured interval, in memory (no
persistence) or, with --durability durable, with every machine syncing a
pebble store in a temporary directory before any effect of a batch leaves
(as amalgam-server dev --durability durable). It needs no cluster: with --transport grpc (the default) each
system runs as a local cluster on the production runtime (what
amalgam-server dev --protocol starts: gRPC on loopback, no bandwidth limit)
driven through the Go client; with --transport sim every system runs on the
same runtime hosts over simulated links whose machine links have a
bandwidth limit (--bandwidth), which models the thesis's network-bound
testbed.

Experiments: all, ` + strings.Join(harness.ExperimentNames(), ", ") + `.
amalgam-bench vs-etcd (a subcommand) compares durable Amalgam with etcd clusters
(and, with --systems, durable ShardedPaxos and RSPaxos);
amalgam-bench recovery measures throughput through a machine's failure and rebuild.
--quick runs every experiment briefly (bench all --quick: under 2 minutes).
Results: text tables (default), --output json, --csv FILE, --plot DIR (SVG).
See docs/benchmarks.md.

Examples:
  amalgam-bench all --quick
  amalgam-bench rmw blocksize --durability durable --plot /tmp/plots
  amalgam-bench scalability --systems amalgam,shardedpaxos --output json > scal.json`,
		Args:          cobra.MinimumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output must be text or json, got %q", output)
			}
			exps, err := harness.Lookup(args)
			if err != nil {
				return err
			}
			switch o.Keys {
			case "uniform", "zipf":
			default:
				return fmt.Errorf("--keys must be uniform or zipf, got %q", o.Keys)
			}
			if o.Warmup < 0 || o.Duration < 0 {
				return fmt.Errorf("--warmup and --duration must not be negative")
			}
			if o.Transport != harness.TransportSim && o.Transport != harness.TransportGRPC {
				return fmt.Errorf("--transport must be %s or %s, got %q", harness.TransportGRPC, harness.TransportSim, o.Transport)
			}
			if o.Durability != "memory" && o.Durability != "durable" {
				return fmt.Errorf("--durability must be memory or durable, got %q", o.Durability)
			}
			if o.Durability == "durable" && o.Transport != harness.TransportGRPC {
				return fmt.Errorf("--durability durable needs --transport %s: the simulated links keep no stores", harness.TransportGRPC)
			}
			if o.Transport == harness.TransportGRPC && cmd.Flags().Changed("bandwidth") {
				return fmt.Errorf("--bandwidth models links in --transport sim only; gRPC on loopback has no link model")
			}
			for _, sys := range o.Systems {
				if !slices.Contains(harness.Systems, sys) {
					return fmt.Errorf("--systems: unknown system %q (want some of %s)", sys, strings.Join(harness.Systems, ","))
				}
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			o.Bandwidth = bandwidth * 1e6
			if bandwidth < 0 {
				o.Bandwidth = -1
			}
			if !noProgress {
				var bar *progressbar.ProgressBar
				o.Progress = func(run, runs int, label string, done float64) {
					if bar == nil {
						bar = progressbar.NewOptions(runs*100, progressbar.OptionSetWriter(os.Stderr),
							progressbar.OptionSetWidth(30), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(),
							progressbar.OptionThrottle(100*time.Millisecond))
					}
					bar.Describe(fmt.Sprintf("run %d/%d %-48s", run+1, runs, label))
					_ = bar.Set(run*100 + int(done*100))
				}
				defer func() {
					if bar != nil {
						_ = bar.Finish()
					}
				}()
			}
			rep, err := harness.Execute(exps, o)
			if err != nil {
				return err
			}
			if csvFile != "" {
				if err := createFile(csvFile, rep.WriteCSV); err != nil {
					return fmt.Errorf("--csv %s: %w", csvFile, err)
				}
			}
			if plotDir != "" {
				if _, err := rep.Plot(plotDir); err != nil {
					return err
				}
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return rep.WriteText(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&output, "output", "text", "output format: text or json")
	ignoreCLIFlags(f)
	f.BoolVar(&o.Quick, "quick", false, "run every experiment briefly (CI)")
	f.DurationVar(&o.Warmup, "warmup", 0, "warm-up before each measured run (default 1s, quick 250ms)")
	f.DurationVar(&o.Duration, "duration", 0, "measured interval of each run (default 5s, quick 900ms)")
	f.Uint64Var(&o.Seed, "seed", 1, "workload seed")
	f.StringVar(&o.Keys, "keys", "uniform", "key distribution: uniform or zipf")
	f.Float64Var(&o.Zipf, "zipf", 1.1, "zipf exponent (with --keys zipf)")
	f.Float64Var(&bandwidth, "bandwidth", 0, fmt.Sprintf("--transport sim: link speed per machine and direction in MB/s (0: the thesis's bandwidth per core, %.1f here; negative: unlimited)", harness.DefaultBandwidth()/1e6))
	f.StringVar(&o.Transport, "transport", harness.TransportGRPC, "grpc (the production runtime on loopback) or sim (the runtime over modelled links)")
	f.StringVar(&o.Durability, "durability", "memory", "memory (nothing persisted) or durable (--transport grpc: each machine syncs a pebble store in a temporary directory, as amalgam-server dev --durability durable)")
	f.StringSliceVar(&o.Systems, "systems", nil, "run only these systems (comma-separated: amalgam,shardedpaxos,rspaxos; default all)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (servers and clients) to this file (go tool pprof)")
	f.StringVar(&csvFile, "csv", "", "also write the points as CSV to this file")
	f.StringVar(&plotDir, "plot", "", "also draw SVG plots into this directory")
	f.BoolVar(&noProgress, "no-progress", false, "do not draw the progress bar (on stderr)")
	cmd.AddCommand(newVsEtcdCmd(), newRecoveryCmd())
	return cmd
}

// ignoreCLIFlags accepts amalgam-cli's other global flags, which reach
// amalgam-bench with the rest of the command line; a benchmark needs no
// cluster, so they do nothing.
func ignoreCLIFlags(f *pflag.FlagSet) {
	for _, name := range []string{"cluster", "timeout", "dial-timeout", "tls-cert", "tls-key", "tls-ca", "config"} {
		f.String(name, "", "ignored (an amalgam-cli flag)")
		_ = f.MarkHidden(name)
	}
}

// report is what a subcommand prints.
type report interface{ WriteText(io.Writer) error }

// reportCmd completes cmd, a subcommand (vs-etcd, recovery) that runs one
// benchmark with run and reports on it: --output (formats, text first),
// --json, --plot (plotHelp; plot draws rep into the directory) and
// --no-progress (otherwise run reports progress on stderr). It returns
// cmd's flags, for the benchmark's own.
func reportCmd[R report](cmd *cobra.Command, formats []string, plotHelp string,
	run func(progress func(string)) (R, error), plot func(rep R, dir string) error) *pflag.FlagSet {
	var (
		output, jsonFile, plotDir string
		noProgress                bool
	)
	cmd.Args = cobra.NoArgs
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !slices.Contains(formats, output) {
			return fmt.Errorf("--output must be %s, got %q", oneOf(formats), output)
		}
		var progress func(string)
		if !noProgress {
			progress = func(s string) { fmt.Fprintf(os.Stderr, "%s: %s\n", cmd.Name(), s) }
		}
		rep, err := run(progress)
		if err != nil {
			return err
		}
		if jsonFile != "" {
			if err := createFile(jsonFile, func(w io.Writer) error { return writeJSON(w, rep) }); err != nil {
				return fmt.Errorf("--json %s: %w", jsonFile, err)
			}
		}
		if plotDir != "" {
			if err := os.MkdirAll(plotDir, 0o755); err != nil {
				return err
			}
			if err := plot(rep, plotDir); err != nil {
				return err
			}
		}
		w := cmd.OutOrStdout()
		switch output {
		case "json":
			return writeJSON(w, rep)
		case "markdown":
			any(rep).(interface{ Markdown(io.Writer) }).Markdown(w)
			return nil
		}
		return rep.WriteText(w)
	}
	f := cmd.Flags()
	ignoreCLIFlags(f)
	f.StringVar(&output, "output", formats[0], "output format: "+oneOf(formats))
	f.StringVar(&jsonFile, "json", "", "also write the report as JSON to this file")
	f.StringVar(&plotDir, "plot", "", plotHelp)
	f.BoolVar(&noProgress, "no-progress", false, "do not report progress on stderr")
	return f
}

// oneOf lists two or more choices: "a, b or c".
func oneOf(choices []string) string {
	n := len(choices)
	return strings.Join(choices[:n-1], ", ") + " or " + choices[n-1]
}

// createFile writes a new file with write.
func createFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
