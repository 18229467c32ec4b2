package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/amalgam-store/amalgam/explore"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultExploreAddr is where mc explore listens without --addr.
const defaultExploreAddr = "127.0.0.1:7480"

func newMCExploreCmd(_ *globalFlags) *cobra.Command {
	var (
		addr string
		open bool
	)
	cmd := &cobra.Command{
		Use:   "explore <scenario> | <trace-file>",
		Short: "Explore a scenario's states step by step in a local web page",
		Long: `explore serves the visual explorer (DSLabs' visual debugger) of a scenario, or
of the scenario of a saved trace, on a local web page and prints its URL.
The page shows the current state: every node (changes since the previous
step marked), the unordered messages in flight, each ordered stream's
queue, the pending timers, the invariants with their explanations, the
path from the initial state and a message-sequence chart of it.

Click an enabled event (deliver, duplicate, drop, stream, fire, crash,
restart, partition, heal) to take it; click a step of the path or of the
history tree to go back and branch (every branch is kept). A trace file
opens at its initial state with forward (→) following it. The page runs a
bounded BFS from the current state to a violation, the next client reply
or a quiet state and goes to what it finds, loads other trace files, saves
the current path as a trace file for mc replay, and downloads the chart
(SVG). Keys: ← back, → forward, Home, End, 1-9 take that event, s search.
It runs until interrupted (Ctrl-C).`,
		Example: `  amalgam-cli mc explore normal
  amalgam-cli mc explore trace.json --addr 127.0.0.1:8080 --open
  amalgam-cli mc run normal --explore-on-violation`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sv, err := explorerFor(args[0])
			if err != nil {
				return fmt.Errorf("mc explore: %w", err)
			}
			return serveExplorer(cmd, sv, addr, open)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", defaultExploreAddr, "address to serve the page on (port 0: any free port)")
	cmd.Flags().BoolVar(&open, "open", false, "open the page in the default browser")
	return cmd
}

// explorerFor explores the scenario named arg, or the trace file arg.
func explorerFor(arg string) (*explore.Server, error) {
	if sc, err := mcLookup(arg); err == nil {
		return explore.New(sc, mcLookup), nil
	}
	if _, err := os.Stat(arg); err != nil {
		return nil, fmt.Errorf("%q is neither a scenario (see mc list) nor a trace file", arg)
	}
	tf, err := mc.LoadTrace(arg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", arg, err)
	}
	sc, err := mcLookup(tf.Scenario)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", arg, err)
	}
	sv := explore.New(sc, mcLookup)
	if err := sv.Load(tf); err != nil {
		return nil, fmt.Errorf("%s: %w", arg, err)
	}
	return sv, nil
}

// addExploreFlag adds mc run's --explore-on-violation.
func addExploreFlag(f *pflag.FlagSet, addr *string) {
	f.StringVar(addr, "explore-on-violation", "", "on a violation, serve the explorer on its trace at this address (default "+defaultExploreAddr+")")
	f.Lookup("explore-on-violation").NoOptDefVal = defaultExploreAddr
}

// exploreViolation serves the explorer on mc run's counterexample.
func exploreViolation(cmd *cobra.Command, sc *mc.Scenario, r *mc.Result, addr string) error {
	sv := explore.New(sc, mcLookup)
	if err := sv.Load(mc.NewTraceFile(sc, r)); err != nil {
		return fmt.Errorf("mc run: explore the violation: %w", err)
	}
	return serveExplorer(cmd, sv, addr, false)
}

// serveExplorer serves sv on addr until interrupted.
func serveExplorer(cmd *cobra.Command, sv *explore.Server, addr string, open bool) error {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("mc explore: %s is in use (another explorer?); pick another --addr", addr)
	} else if err != nil {
		return fmt.Errorf("mc explore: cannot listen on %s: %v", addr, err)
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(cmd.OutOrStdout(), "explorer at %s (Ctrl-C stops it)\n", url)
	if open {
		openBrowser(cmd, url)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: sv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mc explore: %v", err)
	}
	return nil
}

// openBrowser starts the desktop's browser on url, or says it could not.
func openBrowser(cmd *cobra.Command, url string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if err := exec.Command(name, url).Start(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "mc explore: cannot open a browser (%v); open %s yourself\n", err, url)
	}
}
