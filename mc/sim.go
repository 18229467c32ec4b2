package mc

import (
	"fmt"
	"math/rand/v2"
)

// SimOptions shape one randomized run.
type SimOptions struct {
	Seed     uint64
	MaxSteps int
	// Loss and Dup are the chances that an unordered message is lost, or
	// delivered while a copy stays in flight, instead of delivered once.
	Loss, Dup float64
	// TimerChance is the chance of firing a timer when a message could be
	// delivered instead (timers always fire when nothing else can happen).
	TimerChance float64
}

// Step is one event of a run: the state before, the event, and the state after.
type Step struct {
	N      int
	Before *State
	Event  Event
	After  *State
}

// Simulate walks one random path from s until no event is enabled, done
// returns true, or MaxSteps. It calls check after every step and stops at
// the first error, which it returns with the step count.
func Simulate(s *State, opt SimOptions, done func(*State) bool, check func(Step) error) (*State, int, error) {
	rng := rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15))
	for n := 0; n < opt.MaxSteps; n++ {
		if done != nil && done(s) {
			return s, n, nil
		}
		evs := s.Events(Settings{MaxTimerFires: Unlimited})
		if len(evs) == 0 {
			return s, n, nil
		}
		e := pick(rng, evs, opt.TimerChance)
		if e.Kind == Deliver {
			switch r := rng.Float64(); {
			case r < opt.Loss:
				e.Kind = Drop
			case r < opt.Loss+opt.Dup:
				e.Kind = Duplicate
			}
		}
		next, err := s.Apply(e)
		if err != nil {
			return s, n, fmt.Errorf("step %d (%v): %w", n, e, err)
		}
		if check != nil {
			if err := check(Step{N: n, Before: s, Event: e, After: next}); err != nil {
				return next, n + 1, fmt.Errorf("step %d (%v): %w", n, e, err)
			}
		}
		s = next
	}
	return s, opt.MaxSteps, fmt.Errorf("no end after %d steps", opt.MaxSteps)
}

func pick(rng *rand.Rand, evs []Event, timerChance float64) Event {
	var msgs, timers []Event
	for _, e := range evs {
		if e.Kind == Fire {
			timers = append(timers, e)
		} else {
			msgs = append(msgs, e)
		}
	}
	if len(timers) > 0 && (len(msgs) == 0 || rng.Float64() < timerChance) {
		return timers[rng.IntN(len(timers))]
	}
	return msgs[rng.IntN(len(msgs))]
}
