package mc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Deep is the deep-state strategy (RunDeep): a seeded random walk to a
// recovery point of the scenario, then a bounded exhaustive BFS from the
// state reached, round after round with new seeds.
const Deep Strategy = "deep"

// DeepOptions tune RunDeep.
type DeepOptions struct {
	// Round bounds each round's BFS (default 5 s; the whole search stays
	// within the common MaxTime).
	Round time.Duration
	// Linger: a walk stops at the k-th state where a recovery point holds,
	// k drawn from 1..Linger (default 24), so rounds start at different
	// moments of the same stage.
	Linger int
	// Deepen runs each round's BFS with failure budgets (drops,
	// duplicates, crashes, restarts, partitions) raised one at a time:
	// 0 more than the prefix used, then 1, ... up to the scenario's.
	Deepen bool
	// Walk bounds the prefix walks' length (default 200).
	Walk int
}

// RunDeep searches sc with the deep-state strategy. Each round draws a
// walk (seed common.Seed, round number) until one of the scenario's Points
// holds, checking the invariants on the way, then searches from there by
// BFS for Round. It reports the first violation (its trace is the prefix
// then the BFS's path); otherwise, when common.MaxTime or MaxStates runs
// out, the states of all rounds added up and, as MaxDepth, the deepest
// level a round's BFS completed, counted from the initial state. For a
// scenario without Points, one round searches by BFS from the initial
// state within common's limits.
func (sc *Scenario) RunDeep(common Options, d DeepOptions) *Result {
	if d.Round <= 0 {
		d.Round = 5 * time.Second
	}
	if d.Linger <= 0 {
		d.Linger = 24
	}
	if d.Walk <= 0 {
		d.Walk = 200
	}
	var points []Predicate
	if sc.Points != nil {
		points = sc.Points()
	}
	base := sc.Options(BFS)
	start := time.Now()
	total := &Result{}
	left := func() time.Duration {
		if common.MaxTime <= 0 {
			return d.Round
		}
		return common.MaxTime - time.Since(start)
	}
	for round := uint64(0); ; round++ {
		if left() <= 0 {
			total.Outcome = TimeLimit
			break
		}
		if common.MaxStates > 0 && total.States >= common.MaxStates {
			total.Outcome = StateLimit
			break
		}
		rng := rand.New(rand.NewPCG(common.Seed, round))
		prefix, s, bad := walkToPoint(sc.Init(), base, points, rng, d)
		if bad != nil {
			total.Outcome, total.Predicate, total.Explanation = Violation, bad.Predicate, bad.Explanation
			total.Trace, total.Final = prefix, s
			break
		}
		if s == nil {
			continue // the walk ended before a recovery point
		}
		levels := []Settings{base.Settings}
		if d.Deepen {
			levels = deepen(base.Settings, s.Used())
		}
		var r *Result
		for i, set := range levels {
			o := base
			o.Settings = set
			o.MaxTime = min(d.Round/time.Duration(len(levels)), max(left(), time.Millisecond))
			if len(points) == 0 {
				o.MaxTime = common.MaxTime / time.Duration(len(levels)) // one round: BFS from the initial state
			}
			o.Workers, o.Checks, o.NoMemo, o.MaxDepth = common.Workers, common.Checks, common.NoMemo, common.MaxDepth
			if common.MaxStates > 0 {
				o.MaxStates = max(1, common.MaxStates-total.States)
			}
			r = Search(s, o)
			total.States += r.States
			total.MaxDepth = max(total.MaxDepth, len(prefix)+r.MaxDepth)
			if common.Progress != nil {
				fmt.Fprintf(common.Progress, "mc: deep round %d: prefix %d steps, budget level %d/%d, BFS %s, %d states, depth %d (%d from the start), elapsed=%.1fs\n",
					round, len(prefix), i, len(levels)-1, r.Outcome, r.States, r.MaxDepth, len(prefix)+r.MaxDepth, time.Since(start).Seconds())
			}
			if r.Outcome == Violation {
				break
			}
		}
		if r.Outcome == Violation {
			total.Outcome, total.Predicate, total.Explanation = Violation, r.Predicate, r.Explanation
			total.Trace, total.Final, total.Idempotence = append(prefix, r.Trace...), r.Final, r.Idempotence
			break
		}
		if len(points) == 0 {
			total.Outcome = r.Outcome
			break
		}
	}
	total.Elapsed = time.Since(start)
	return total
}

// walkToPoint walks from s choosing events with rng until a recovery
// point has held Linger-drawn times. It returns the walk and the state
// reached (nil if the walk ended first), or the first invariant that
// fails on the way, with the walk to it.
func walkToPoint(s *State, o Options, points []Predicate, rng *rand.Rand, d DeepOptions) ([]Event, *State, *Result) {
	var path []Event
	stopAt := 1 + rng.IntN(d.Linger)
	for step := 0; ; step++ {
		for _, p := range o.Invariants {
			if ok, why := p.Check(s); !ok {
				return path, s, &Result{Predicate: p.Name, Explanation: why}
			}
		}
		if len(points) == 0 {
			return path, s, nil
		}
		for _, p := range points {
			if ok, _ := p.Check(s); ok {
				if stopAt--; stopAt == 0 {
					return path, s, nil
				}
				break
			}
		}
		if step >= d.Walk {
			return nil, nil, nil
		}
		evs := s.Events(o.Settings)
		var next *State
		for len(evs) > 0 && next == nil {
			k := rng.IntN(len(evs))
			n, err := s.Apply(evs[k])
			if err != nil {
				var hp *HandlerPanic
				if errors.As(err, &hp) {
					return append(path, evs[k]), n, &Result{Predicate: HandlerPanicPredicate, Explanation: hp.Error()}
				}
				evs = append(evs[:k], evs[k+1:]...)
				continue
			}
			next = n
			path = append(path, evs[k])
		}
		if next == nil {
			return nil, nil, nil
		}
		s = next
	}
}

// deepen lists set with its failure budgets raised one level at a time
// above what used already took, up to set's own bounds.
func deepen(set Settings, used Budget) []Settings {
	var out []Settings
	for level := 0; ; level++ {
		c := set
		more := false
		capAt := func(bound *int, took int) {
			if *bound == Unlimited || *bound > took+level {
				*bound = took + level
				more = true
			}
		}
		capAt(&c.MaxDrops, used.Drops)
		capAt(&c.MaxDuplicates, used.Duplicates)
		capAt(&c.MaxCrashes, used.Crashes)
		capAt(&c.MaxRestarts, used.Restarts)
		capAt(&c.MaxPartitions, used.Partitions)
		out = append(out, c)
		if !more || level >= 3 {
			return out
		}
	}
}
