package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/amalgam-store/amalgam/check"
	"github.com/amalgam-store/amalgam/mc"
	"github.com/spf13/cobra"
)

func newMCCmd(gl *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mc",
		Short: "Model-check the protocol code (offline)",
		Long: `mc runs the model checker in mc/ on the named scenarios of check/: the
unmodified data, parity and witness servers under every interleaving, loss,
duplication and crash the scenario allows. The baselines' scenarios
(check/baselines) check the ShardedPaxos and RSPaxos replicas the same way.
It needs no cluster. See docs/model-checking.md.`,
	}
	cmd.AddCommand(newMCListCmd(gl), newMCRunCmd(gl), newMCReplayCmd(gl), newMCExploreCmd(gl))
	return cmd
}

// mcScenarios is every scenario the mc commands offer, by system, then name.
func mcScenarios() []*mc.Scenario { return mcRegistry().All() }

// mcLookup finds a scenario of any system by name.
func mcLookup(name string) (*mc.Scenario, error) { return mcRegistry().Lookup(name) }

// mcRegistry builds the registry the mc commands offer (tests add to it).
var mcRegistry = check.Registry

func newMCListCmd(gl *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the scenarios: name, system checked (amalgam, shardedpaxos or rspaxos), setup",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if gl.output == "json" {
				type js struct {
					Name   string `json:"name"`
					System string `json:"system"`
					Doc    string `json:"doc"`
				}
				var out []js
				for _, sc := range mcScenarios() {
					out = append(out, js{sc.Name, sc.System, sc.Doc})
				}
				return writeJSON(w, out)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, sc := range mcScenarios() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", sc.Name, sc.System, sc.Doc)
			}
			return tw.Flush()
		},
	}
}

// mcSummary is the --output json summary of mc run and mc replay.
type mcSummary struct {
	Scenario   string       `json:"scenario"`
	System     string       `json:"system"`
	Strategy   string       `json:"strategy"`
	States     int          `json:"states"`
	MaxDepth   int          `json:"max_depth"`
	ElapsedS   float64      `json:"elapsed_s"`
	StatesPerS float64      `json:"states_per_s"`
	Result     string       `json:"result"`
	Violation  *mcViolation `json:"violation"`
}

type mcViolation struct {
	Predicate   string `json:"predicate"`
	Explanation string `json:"explanation"`
	TraceLength int    `json:"trace_length"`
	TraceFile   string `json:"trace_file,omitempty"`
}

func newMCRunCmd(gl *globalFlags) *cobra.Command {
	var (
		strategy, checks, saveTrace string
		maxTime                     time.Duration
		maxDepth, maxStates         int
		workers                     int
		seed                        uint64
		quiet, skipNoOps            bool
		exploreAddr                 string
	)
	cmd := &cobra.Command{
		Use:   "run <scenario>",
		Short: "Search a scenario's state graph for invariant violations",
		Long: `run searches a scenario (see mc list). Strategies: bfs (shortest
counterexamples, --workers in parallel), dfs, random (seeded walks) and
guided (the scenario's punctuated plan). A violation's trace is minimized,
reordered by happens-before and printed; --save-trace writes it as JSON for
mc replay. --checks takes a comma list of determinism, clone-hash and
idempotence (self-checks, slower). Progress goes to stderr. Exit status:
0 when the search ends without a violation (exhausted, or a limit hit),
3 on a violation (one line on stderr names it), 1 on any other error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := mcLookup(args[0])
			if err != nil {
				return fmt.Errorf("mc run: %w", err)
			}
			st := mc.Strategy(strategy)
			switch st {
			case mc.BFS, mc.DFS, mc.Random, mc.Guided:
			default:
				return fmt.Errorf("mc run: --strategy must be bfs, dfs, random or guided, got %q", strategy)
			}
			if workers < 1 {
				return fmt.Errorf("mc run: --workers must be at least 1, got %d", workers)
			}
			var ck mc.Checks
			for _, c := range strings.Split(checks, ",") {
				switch strings.TrimSpace(c) {
				case "":
				case "determinism":
					ck.Determinism = true
				case "clone-hash":
					ck.CloneHash = true
				case "idempotence":
					ck.Idempotence = true
				default:
					return fmt.Errorf("mc run: unknown check %q (want determinism, clone-hash, idempotence)", c)
				}
			}
			opt := mc.Options{MaxTime: maxTime, MaxDepth: maxDepth, MaxStates: maxStates, Workers: workers, Seed: seed, Checks: ck}
			if !quiet {
				opt.Progress = cmd.ErrOrStderr()
			}
			if skipNoOps {
				c := *sc
				c.Settings.SkipNoOps = true
				sc = &c
			}
			r := sc.Run(st, opt)
			mc.Explain(sc, r)
			sum := mcSummary{Scenario: sc.Name, System: sc.System, Strategy: strategy, States: r.States, MaxDepth: r.MaxDepth,
				ElapsedS: r.Elapsed.Seconds(), StatesPerS: r.StatesPerSecond(), Result: string(r.Outcome)}
			if r.Outcome == mc.Violation {
				sum.Violation = &mcViolation{Predicate: r.Predicate, Explanation: r.Explanation, TraceLength: len(r.Trace)}
				if saveTrace != "" {
					if err := mc.NewTraceFile(sc, r).Save(saveTrace); err != nil {
						return fmt.Errorf("mc run: save trace: %w", err)
					}
					sum.Violation.TraceFile = saveTrace
				}
			}
			w := cmd.OutOrStdout()
			if gl.output == "json" {
				if err := writeJSON(w, sum); err != nil {
					return err
				}
			} else {
				printSummary(w, sum, r.Idempotence)
				if r.Outcome == mc.Violation || r.Outcome == mc.GoalFound {
					fmt.Fprintln(w, "trace:")
					sc.PrintTrace(w, r.Trace)
				}
			}
			if r.Outcome == mc.Violation && exploreAddr != "" {
				if err := exploreViolation(cmd, sc, r, exploreAddr); err != nil {
					return err
				}
			}
			if r.Outcome == mc.Violation {
				return violationExit(sc.Name, sum.Violation)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&strategy, "strategy", "bfs", "bfs, dfs, random or guided")
	f.DurationVar(&maxTime, "max-time", time.Minute, "stop after this long (0: no limit)")
	f.IntVar(&maxDepth, "max-depth", 0, "depth bound (0: the scenario's)")
	f.IntVar(&maxStates, "max-states", 0, "stop after this many distinct states (0: no limit)")
	f.IntVar(&workers, "workers", mc.DefaultWorkers(), "BFS and random-walk workers")
	f.Uint64Var(&seed, "seed", 1, "seed of the random walks")
	f.StringVar(&checks, "checks", "", "self-checks: determinism,clone-hash,idempotence")
	f.StringVar(&saveTrace, "save-trace", "", "write a violation's trace to this JSON file")
	f.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	f.BoolVar(&skipNoOps, "skip-noops", false, "deliveries and timer firings that change nothing are no step (Settings.SkipNoOps)")
	addExploreFlag(f, &exploreAddr)
	return cmd
}

// exitViolation is the status of mc run when the search finds a violation.
const exitViolation = 3

// violationExit is mc run's error for a violation: status exitViolation,
// one line naming the scenario, the invariant and the trace's length (the
// summary on stdout already documents it).
func violationExit(scenario string, v *mcViolation) error {
	return &exitError{code: exitViolation, documented: true,
		err: fmt.Errorf("mc run: scenario %s violates %q (trace of %d steps)", scenario, v.Predicate, v.TraceLength)}
}

func printSummary(w io.Writer, s mcSummary, idem []string) {
	fmt.Fprintf(w, "scenario %s, strategy %s: %s\n", s.Scenario, s.Strategy, s.Result)
	fmt.Fprintf(w, "%d states, max depth %d, %.2fs, %.0f states/s\n", s.States, s.MaxDepth, s.ElapsedS, s.StatesPerS)
	if len(idem) > 0 {
		fmt.Fprintf(w, "handlers not idempotent: %s\n", strings.Join(idem, ", "))
	}
	if v := s.Violation; v != nil {
		fmt.Fprintf(w, "violation of %q: %s\n", v.Predicate, v.Explanation)
		if v.TraceFile != "" {
			fmt.Fprintf(w, "trace of %d steps saved to %s\n", v.TraceLength, v.TraceFile)
		}
	}
}

func newMCReplayCmd(gl *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay a saved trace and report the violation it reaches",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tf, err := mc.LoadTrace(args[0])
			if err != nil {
				return fmt.Errorf("mc replay: %s: %w", args[0], err)
			}
			sc, err := mcLookup(tf.Scenario)
			if err != nil {
				return fmt.Errorf("mc replay: %s: %w", args[0], err)
			}
			start := time.Now()
			rp, err := mc.Replay(sc, tf)
			if err != nil {
				return fmt.Errorf("mc replay: %s: %w", args[0], err)
			}
			sum := mcSummary{Scenario: sc.Name, System: sc.System, Strategy: "replay", States: len(rp.Events) + 1, MaxDepth: len(rp.Events),
				ElapsedS: time.Since(start).Seconds(), Result: "no_violation"}
			if rp.Predicate != "" {
				sum.Result = string(mc.Violation)
				sum.Violation = &mcViolation{Predicate: rp.Predicate, Explanation: rp.Explanation, TraceLength: len(rp.Events), TraceFile: args[0]}
			}
			if gl.output == "json" {
				if err := writeJSON(cmd.OutOrStdout(), sum); err != nil {
					return err
				}
			} else {
				sc.PrintTrace(cmd.OutOrStdout(), rp.Events)
				printSummary(cmd.OutOrStdout(), sum, nil)
			}
			if rp.Predicate != tf.Predicate {
				return fmt.Errorf("mc replay: %s: the trace no longer reaches %q (got %q)", args[0], tf.Predicate, rp.Predicate)
			}
			return nil
		},
	}
}
