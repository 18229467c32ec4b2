package main

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/online"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// amalgam-cli mc online: the model checker on consistent cuts of a
// running cluster (package online).

func newMCOnlineCmd(gl *globalFlags) *cobra.Command {
	var o online.Options
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
interrupted or --cuts cuts are searched, and fails if it predicted a
violation. See docs/model-checking.md, "Online checking".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if gl.cluster == "" {
				return fmt.Errorf("mc online: --cluster is required")
			}
			sctx, done, c, err := connect(cmd, gl)
			if err != nil {
				return fmt.Errorf("mc online: %w", err)
			}
			defer done()
			st, err := c.Status(sctx)
			if err != nil {
				return fmt.Errorf("mc online: %w", err)
			}
			ms := slices.Clone(st.GetMachines())
			slices.SortFunc(ms, func(a, b *wire.Machine) int { return int(a.GetIndex() - b.GetIndex()) })
			var addrs []string
			var conns []grpc.ClientConnInterface
			for _, m := range ms {
				cc, err := c.Conn(m.GetAddr())
				if err != nil {
					return fmt.Errorf("mc online: %w", err)
				}
				addrs, conns = append(addrs, m.GetAddr()), append(conns, cc)
			}
			o.Cluster = runtime.ClusterID(c.Layout())
			o.Log = cmd.OutOrStdout()
			if o.Dir != "" {
				if err := os.MkdirAll(o.Dir, 0o755); err != nil {
					return fmt.Errorf("mc online: %w", err)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			rep, err := online.Run(ctx, online.Machines(conns, addrs, o.Cluster), o)
			if err != nil {
				return fmt.Errorf("mc online: %w", err)
			}
			total := 0
			for _, n := range rep.States {
				total += n
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d snapshot rounds: %d cuts searched (%d states), %d not a cut, %d dropped; %d violations predicted\n",
				rep.Pulled, len(rep.States), total, rep.Rejected, rep.Dropped, len(rep.Found))
			for _, f := range rep.Found {
				fmt.Fprintf(cmd.OutOrStdout(), "predicted %q in %d events: cut %s, trace %s\n", f.Predicate, f.Depth, f.Cut, f.Trace)
			}
			if len(rep.Found) > 0 {
				return fmt.Errorf("mc online: %d violations predicted", len(rep.Found))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.Every, "every", time.Second, "time between snapshots")
	f.IntVar(&o.MaxStates, "max-states", 20000, "states searched per cut")
	f.DurationVar(&o.MaxTime, "max-time", 10*time.Second, "search time per cut")
	f.IntVar(&o.MaxDepth, "max-depth", 0, "events per path from the cut (0: no bound)")
	f.IntVar(&o.Workers, "workers", 1, "search workers")
	f.BoolVar(&o.Consequence, "consequence", true, "consequence prediction: a node's timers, crashes and restarts explored only in the first state its local state is seen")
	f.IntVar(&o.Settings.MaxTimerFires, "timer-fires", 0, "timer firings per path")
	f.IntVar(&o.Settings.MaxCrashes, "crashes", 0, "crashes per path")
	f.IntVar(&o.Cuts, "cuts", 0, "stop after this many cuts searched (0: until interrupted)")
	f.BoolVar(&o.StopAtViolation, "stop", false, "stop at the first predicted violation")
	f.StringVar(&o.Dir, "dir", ".", "where predicted violations' cuts and traces are saved")
	cmd.AddCommand(newMCOnlineReplayCmd())
	return cmd
}

func newMCOnlineReplayCmd() *cobra.Command {
	var cut string
	cmd := &cobra.Command{
		Use:   "replay --snapshot CUT TRACE",
		Short: "Replay a trace mc online saved, from its saved cut",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cut == "" {
				return fmt.Errorf("mc online replay: --snapshot is required")
			}
			rp, err := online.Replay(cut, args[0])
			if err != nil {
				return fmt.Errorf("mc online replay: %w", err)
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
	return cmd
}
