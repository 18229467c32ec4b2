package main

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/online"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// amalgam-cli mc online: the model checker on consistent cuts of a
// running cluster (package online).

func newMCOnlineCmd(gl *globalFlags) *cobra.Command {
	var o online.Options
	var steer bool
	var mutant string
	cmd := &cobra.Command{
		Use:   "online",
		Short: "Check a running cluster: search from consistent cuts of it",
		Long: `online pulls a snapshot of every machine of --cluster (--every apart), joins
them into a consistent cut (stream messages in flight included; unordered
ones count as lost), restores the servers from it through their own
Restore, and runs a bounded breadth-first search from there with the
server invariants. A predicted violation's cut and trace are saved in
--dir; amalgam-cli mc online replay --snapshot CUT TRACE replays it
offline. A search slower than the pulls drops cuts. It runs until
interrupted or --cuts cuts are searched, and exits with status 3 if it
predicted a violation; --output json prints the summary as one document.
A cluster that runs a mutant (amalgam-server --mutant, -tags mutants) is
checked with the same --mutant, so that the search runs the code the
cluster runs. With --steer, a predicted violation installs an event filter
(drop an unordered message kind, pause a stream, postpone a timer) chosen
from its trace, once a search from the cut with the filter in place finds
no violation; it expires after --steer-for. See docs/model-checking.md,
"Online checking".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			undo, err := setMutant(mutant)
			if err != nil {
				return fmt.Errorf("mc online: %w", err)
			}
			defer undo()
			m, err := onlineConnect(cmd, gl)
			if err != nil {
				return fmt.Errorf("mc online: %w", err)
			}
			defer m.done()
			o.Cluster = m.cluster
			o.Log = cmd.OutOrStdout()
			if gl.output == "json" {
				o.Log = cmd.ErrOrStderr() // stdout holds the summary alone
			}
			if o.Dir != "" {
				if err := os.MkdirAll(o.Dir, 0o755); err != nil {
					return fmt.Errorf("mc online: %w", err)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if steer {
				o.Steer = online.MachinesSteerer(m.conns, m.addrs, m.cluster)
			}
			rep, err := online.Run(ctx, online.Machines(m.conns, m.addrs, o.Cluster), o)
			if err != nil {
				return fmt.Errorf("mc online: %w", err)
			}
			sum := summarizeOnline(rep, steer)
			if gl.output == "json" {
				if err := writeJSON(cmd.OutOrStdout(), sum); err != nil {
					return err
				}
			} else {
				printOnline(cmd.OutOrStdout(), sum)
			}
			if len(rep.Found) > 0 {
				return &exitError{code: exitViolation, documented: true, err: fmt.Errorf("mc online: %d violations predicted", len(rep.Found))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Every, "every", time.Second, "time between snapshots")
	searchFlags(f, &o)
	f.IntVar(&o.MaxDepth, "max-depth", 0, "events per path from the cut (0: no bound)")
	f.IntVar(&o.Workers, "workers", 1, "search workers")
	f.IntVar(&o.Cuts, "cuts", 0, "stop after this many cuts searched or the same as the last one searched (0: until interrupted)")
	f.BoolVar(&o.StopAtViolation, "stop", false, "stop at the first predicted violation")
	f.StringVar(&o.Dir, "dir", ".", "where predicted violations' cuts and traces are saved")
	f.BoolVar(&steer, "steer", false, "install checked event filters that steer the cluster away from predicted violations")
	f.DurationVar(&o.SteerFor, "steer-for", time.Second, "how long a steering filter lasts")
	f.BoolVar(&o.CheckFilters, "steer-check", false, "with --steer, try first a check filter: the immediate check on the node that takes the predicted bad step")
	f.DurationVar(&o.CheckFor, "check-for", time.Second, "how long a check filter lasts")
	f.BoolVar(&o.HoldFilters, "steer-hold", false, "with --steer, try hold filters instead: the receiver holds the predicted messages of one kind from the predicted operation on, and applies them in operation order when the filter expires")
	f.DurationVar(&o.HoldFor, "hold-for", time.Second, "how long a hold filter lasts")
	f.StringVar(&mutant, "mutant", "", "the mutant the cluster runs (amalgam-server --mutant): search with it injected")
	cmd.AddCommand(newMCOnlineReplayCmd(gl), newMCOnlineSteerCmd(gl))
	return cmd
}

// onlineMachines is a connection to every machine of --cluster.
type onlineMachines struct {
	cluster string
	addrs   []string
	conns   []grpc.ClientConnInterface
	done    func()
}

func onlineConnect(cmd *cobra.Command, gl *globalFlags) (*onlineMachines, error) {
	if gl.cluster == "" {
		return nil, fmt.Errorf("--cluster is required")
	}
	ctx, done, c, err := connect(cmd, gl)
	if err != nil {
		return nil, err
	}
	st, err := c.Status(ctx)
	if err != nil {
		done()
		return nil, err
	}
	ms := slices.Clone(st.GetMachines())
	slices.SortFunc(ms, func(a, b *wire.Machine) int { return int(a.GetIndex() - b.GetIndex()) })
	m := &onlineMachines{cluster: runtime.ClusterID(c.Layout()), done: done}
	for _, mm := range ms {
		cc, err := c.Conn(mm.GetAddr())
		if err != nil {
			done()
			return nil, err
		}
		m.addrs, m.conns = append(m.addrs, mm.GetAddr()), append(m.conns, cc)
	}
	return m, nil
}

func newMCOnlineSteerCmd(gl *globalFlags) *cobra.Command {
	var f online.Filter
	var o online.Options
	var d time.Duration
	var from, to string
	cmd := &cobra.Command{
		Use:   "steer --from NODE --to NODE --kind KIND --for DURATION",
		Short: "Install an event filter on the running cluster, once a search from a cut finds it safe",
		Long: `steer drops the unordered messages of --kind (a message type's name, such
as SnapshotData) that --from sends to --to, for --for, on the machine that
hosts --from; --kind stream pauses the stream from --from to --to, and
--kind timer:TYPE postpones the --from node's timers of TYPE (--to is
--from), --kind check:KIND runs the immediate check on the --from node's
messages of KIND, and --kind hold:KIND[@op>=N,stripe=S] holds at --to
(on its machine) the messages of KIND from --from (from every sender when
--to is --from) that carry operation N or later and stripe S, and
applies them in operation order when it expires. It first takes a consistent cut of --cluster and searches
from it with the filter in place (the bounds of mc online); it refuses to
install a filter with which the search finds a violation.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.From, f.To = node.Addr(from), node.Addr(to)
			if from == "" || to == "" || f.Kind == "" || d <= 0 {
				return fmt.Errorf("mc online steer: --from, --to, --kind and a positive --for are required")
			}
			m, err := onlineConnect(cmd, gl)
			if err != nil {
				return fmt.Errorf("mc online steer: %w", err)
			}
			defer m.done()
			var cut *online.Cut
			for attempt := 0; cut == nil; attempt++ {
				snaps, err := online.Machines(m.conns, m.addrs, m.cluster)(cmd.Context())
				if err == nil {
					cut, err = online.NewCut(snaps)
				}
				if err != nil && attempt == 9 {
					return fmt.Errorf("mc online steer: no consistent cut in 10 rounds: %w", err)
				}
				if cut == nil {
					time.Sleep(runtime.DefaultSnapshotMinInterval)
				}
			}
			r, err := cut.CheckFilter(f, o)
			if err != nil {
				return fmt.Errorf("mc online steer: %w", err)
			}
			if r.Outcome == mc.Violation {
				return fmt.Errorf("mc online steer: not installed: with %s the search finds %q in %d events: %s", f, r.Predicate, len(r.Trace), r.Explanation)
			}
			if err := online.Steer(cmd.Context(), m.conns, m.addrs, m.cluster, f, d); err != nil {
				return fmt.Errorf("mc online steer: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed for %v: %s (search from the cut: %s, %d states)\n", d, f, r.Outcome, r.States)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "the sending node (data/0)")
	fl.StringVar(&to, "to", "", "the receiving node")
	fl.StringVar(&f.Kind, "kind", "", "the message type's name, stream, timer:TYPE or check:KIND")
	fl.DurationVar(&d, "for", 10*time.Second, "how long the filter lasts")
	searchFlags(fl, &o)
	return cmd
}

// searchFlags are the bounds of the search from a cut.
func searchFlags(f *pflag.FlagSet, o *online.Options) {
	f.IntVar(&o.MaxStates, "max-states", 20000, "states searched per cut")
	f.DurationVar(&o.MaxTime, "max-time", 10*time.Second, "search time per cut")
	f.BoolVar(&o.Consequence, "consequence", true, "consequence prediction: a node's timers, crashes and restarts explored only in the first state its local state is seen")
	f.IntVar(&o.Settings.MaxTimerFires, "timer-fires", 0, "timer firings per path")
	f.IntVar(&o.Settings.MaxCrashes, "crashes", 0, "crashes per path")
}

func newMCOnlineReplayCmd(gl *globalFlags) *cobra.Command {
	var cut, mutant string
	cmd := &cobra.Command{
		Use:   "replay --snapshot CUT TRACE",
		Short: "Replay a trace mc online saved, from its saved cut",
		Long: `replay restores the servers from the saved cut (--snapshot) and replays the
trace from there; it fails unless an invariant fails. A trace predicted on
a cluster that runs a mutant replays with the same --mutant. --output json
prints {predicate, explanation, trace_length, trace_file, cut}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cut == "" {
				return fmt.Errorf("mc online replay: --snapshot is required")
			}
			undo, err := setMutant(mutant)
			if err != nil {
				return fmt.Errorf("mc online replay: %w", err)
			}
			defer undo()
			rp, err := online.Replay(cut, args[0])
			if err != nil {
				return fmt.Errorf("mc online replay: %w", err)
			}
			if gl.output == "json" {
				return writeJSON(cmd.OutOrStdout(), onlineFound{Cut: cut, Depth: len(rp.Events),
					mcViolation: mcViolation{Predicate: rp.Predicate, Explanation: rp.Explanation, TraceLength: len(rp.Events), TraceFile: args[0]}})
			}
			c, err := online.LoadCut(cut)
			if err != nil {
				return fmt.Errorf("mc online replay: %w", err)
			}
			c.Scenario().PrintTrace(cmd.OutOrStdout(), rp.Events)
			fmt.Fprintf(cmd.OutOrStdout(), "violation after %d events: %s: %s\n", len(rp.Events), rp.Predicate, rp.Explanation)
			return nil
		},
	}
	cmd.Flags().StringVar(&cut, "snapshot", "", "the cut the trace starts from (cut-N.gob)")
	cmd.Flags().StringVar(&mutant, "mutant", "", "replay with this mutant injected (the one the cluster ran)")
	return cmd
}
