package online

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/runtime"
)

// Source takes one snapshot of every machine of the cluster.
type Source func(ctx context.Context) ([]*runtime.Snapshot, error)

// Options configure a Checker run.
type Options struct {
	// Cluster is the identity expected (runtime.ClusterID); "" takes the
	// first snapshot's. Snapshots of another cluster end the run.
	Cluster string
	// Every is the time between pulls (default 1s).
	Every time.Duration
	// The search from each cut: breadth-first, bounded (MaxStates
	// default 20000, MaxTime default 10s), with Settings' failures.
	MaxStates int
	MaxTime   time.Duration
	MaxDepth  int
	Workers   int
	Settings  mc.Settings
	// Consequence turns on consequence prediction (mc.Options.Consequence).
	Consequence bool
	// Cuts stops the run after this many cuts searched or found the same
	// as the last one searched (0: until ctx ends).
	Cuts int
	// StopAtViolation ends the run at the first predicted violation.
	StopAtViolation bool
	// Dir receives each violation's cut (cut-N.gob) and trace
	// (trace-N.json); "" saves nothing.
	Dir string
	// Log gets one line per cut; nil: none.
	Log io.Writer
	// Steer, if set, turns on automatic execution steering: a predicted
	// violation installs a filter chosen from its trace (steer.go) for
	// SteerFor (default 1s).
	Steer    Steerer
	SteerFor time.Duration
	// CheckFilters makes steering try, before the trace's other
	// candidates, check filters (runtime.CheckPrefix): the immediate
	// check on the node that takes the trace's bad step, for CheckFor
	// (default SteerFor).
	CheckFilters bool
	CheckFor     time.Duration
	// HoldFilters makes steering try hold filters (runtime.HoldPrefix)
	// instead of the trace's other candidates: the receiver holds the
	// predicted messages of one kind from the predicted operation on, and
	// applies them in operation order when the filter expires, after
	// HoldFor (default SteerFor).
	HoldFilters bool
	HoldFor     time.Duration
}

// Report is what a run did.
type Report struct {
	Pulled   int   // snapshot rounds taken
	Rejected int   // rounds that were not a cut (or did not restore)
	Dropped  int   // cuts dropped because the search fell behind
	Same     int   // cuts not searched: the same state and filters as the last one searched
	States   []int // distinct states explored from each cut searched
	Found    []Found
	// Steering: the filters installed, and the predictions no candidate
	// filter kept safe (or that failed at the cut itself).
	Installed []Installed
	Unsteered int
}

// Found is a predicted violation.
type Found struct {
	Predicate, Explanation string
	Depth                  int       // events from the cut (0: the cut violates it)
	Cut, Trace             string    // saved files ("" if Options.Dir is empty)
	At                     time.Time // when the search found it
}

// Run pulls snapshots from src every o.Every, joins them into cuts and
// searches from each. A search slower than the pulls drops the older
// pending cut (only the newest waits), so memory stays bounded.
func Run(ctx context.Context, src Source, o Options) (*Report, error) {
	o = o.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rep := &Report{}
	var st steering
	var last string // the last cut searched: its state's fingerprint and the live filters
	cuts := make(chan *Cut, 1)
	pullErr := make(chan error, 1)
	var counts struct{ pulled, rejected, dropped int }
	done := make(chan struct{})
	go func() {
		defer close(done)
		pullErr <- pull(ctx, src, o, cuts, &counts)
	}()
	defer func() {
		cancel()
		<-done
		rep.Pulled, rep.Rejected, rep.Dropped = counts.pulled, counts.rejected, counts.dropped
	}()
	for {
		var c *Cut
		select {
		case c = <-cuts:
		case err := <-pullErr:
			if ctx.Err() != nil {
				return rep, nil
			}
			return rep, err
		case <-ctx.Done():
			return rep, nil
		}
		live := st.active(renewWithin * o.Every)
		init, err := c.State()
		if err != nil {
			return rep, err
		}
		// A stalled cluster gives the same cut round after round: it is
		// searched once (again once the live filters change).
		key := fmt.Sprint(init.Fingerprint(), live)
		if key == last {
			rep.Same++
			if o.Log != nil {
				fmt.Fprintln(o.Log, "cut: the same as the last one searched, with the same filters")
			}
			if o.Cuts > 0 && len(rep.States)+rep.Same >= o.Cuts {
				return rep, nil
			}
			continue
		}
		last = key
		f, r, err := search(c, init, o, len(rep.States), live)
		if err != nil {
			return rep, err
		}
		states := r.States
		rep.States = append(rep.States, states)
		if f != nil {
			rep.Found = append(rep.Found, *f)
		}
		if o.Log != nil {
			line := fmt.Sprintf("cut %d: %d servers, %d stream messages in flight, %d states", len(rep.States), len(c.Nodes), len(c.InFlight), states)
			if f != nil {
				line += fmt.Sprintf("; predicted violation of %q in %d events: %s", f.Predicate, f.Depth, f.Explanation)
			}
			fmt.Fprintln(o.Log, line)
		}
		if f != nil && o.Steer != nil {
			if f.Depth == 0 {
				rep.Unsteered++
			} else if err := st.steer(ctx, c, len(rep.States), r, o, rep, o.Log); err != nil {
				return rep, err
			}
		}
		if (f != nil && o.StopAtViolation) || (o.Cuts > 0 && len(rep.States)+rep.Same >= o.Cuts) {
			return rep, nil
		}
	}
}

// renewWithin is how many pulls ahead a filter's expiry is seen: the
// search from a cut leaves out the filters that expire within it, so a
// filter whose error path is still reachable is renewed before it lapses.
const renewWithin = 3

// pull takes snapshots until ctx ends or a snapshot is of another
// cluster. Counts are read once the puller has ended.
func pull(ctx context.Context, src Source, o Options, cuts chan *Cut, n *struct{ pulled, rejected, dropped int }) error {
	t := time.NewTicker(o.Every)
	defer t.Stop()
	want := o.Cluster
	for {
		snaps, err := src(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n.pulled++
		var c *Cut
		if err == nil {
			c, err = NewCut(snaps)
		}
		switch {
		case err != nil:
			n.rejected++
			if o.Log != nil {
				fmt.Fprintf(o.Log, "snapshot rejected: %v\n", err)
			}
		case want != "" && c.Cluster != want:
			return fmt.Errorf("snapshot of cluster %s, but checking cluster %s", c.Cluster, want)
		default:
			want = c.Cluster
			select {
			case old := <-cuts:
				if old != nil {
					n.dropped++
				}
			default:
			}
			cuts <- c
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// search runs the bounded search from cut c (number i of the run), whose
// state is init, with the live filters in place.
func search(c *Cut, init *mc.State, o Options, i int, live []Filter) (*Found, *mc.Result, error) {
	sc := c.Scenario()
	r := explore(init, searchOptions(c, o, live))
	if r.Outcome != mc.Violation {
		return nil, r, nil
	}
	f := &Found{Predicate: r.Predicate, Explanation: r.Explanation, Depth: len(r.Trace), At: time.Now()}
	if o.Dir != "" {
		f.Cut = filepath.Join(o.Dir, fmt.Sprintf("cut-%d.gob", i+1))
		f.Trace = filepath.Join(o.Dir, fmt.Sprintf("trace-%d.json", i+1))
		if err := c.Save(f.Cut); err != nil {
			return nil, nil, err
		}
		if err := mc.NewTraceFile(sc, r).Save(f.Trace); err != nil {
			return nil, nil, err
		}
	}
	return f, r, nil
}

func (o Options) withDefaults() Options {
	if o.Every <= 0 {
		o.Every = time.Second
	}
	if o.MaxStates == 0 {
		o.MaxStates = 20000
	}
	if o.MaxTime == 0 {
		o.MaxTime = 10 * time.Second
	}
	if o.SteerFor <= 0 {
		o.SteerFor = time.Second
	}
	if o.CheckFor <= 0 {
		o.CheckFor = o.SteerFor
	}
	if o.HoldFor <= 0 {
		o.HoldFor = o.SteerFor
	}
	return o
}

// explore is the search of opt from init: breadth-first, then, if a bound
// cut it short, walks seeded random walks of at most walkDepth events
// within the same bounds (a cut with a dozen messages in flight can have
// its violation 20 events deep, past the levels breadth-first reaches).
// The result's States adds up both.
func explore(init *mc.State, opt mc.Options) *mc.Result {
	r := mc.Search(init, opt)
	if r.Outcome != mc.StateLimit && r.Outcome != mc.TimeLimit {
		return r
	}
	opt.Strategy, opt.Walks, opt.MaxDepth, opt.Seed, opt.Consequence = mc.Random, walks, walkDepth, init.Fingerprint(), false
	w := mc.Search(init, opt)
	w.States += r.States
	return w
}

// explore's random walks: how many, and how deep at most.
const (
	walks     = 50
	walkDepth = 60
)

// searchOptions is the search of o from cut c, with the live filters.
func searchOptions(c *Cut, o Options, live []Filter) mc.Options {
	o = o.withDefaults()
	opt := c.Scenario().Options(mc.BFS)
	opt.Settings, opt.MaxStates, opt.MaxTime, opt.MaxDepth, opt.Workers = o.Settings, o.MaxStates, o.MaxTime, o.MaxDepth, o.Workers
	opt.Consequence, opt.Filter, opt.FilterAt = o.Consequence, allowAll(live), allowAllAt(live)
	return opt
}

// Replay replays a trace saved by Run from its saved cut.
func Replay(cutFile, traceFile string) (*mc.Replayed, error) {
	c, err := LoadCut(cutFile)
	if err != nil {
		return nil, err
	}
	if _, err := c.State(); err != nil {
		return nil, err
	}
	tf, err := mc.LoadTrace(traceFile)
	if err != nil {
		return nil, err
	}
	rp, err := mc.Replay(c.Scenario(), tf)
	if err != nil {
		return nil, err
	}
	if rp.Predicate == "" {
		return rp, errors.New("the trace replays from the cut but no invariant fails")
	}
	return rp, nil
}
