package recovery

import (
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// How often a rebuilding server re-asks for unanswered snapshot parts.
const (
	RetryMin = 50 * time.Millisecond
	RetryMax = 100 * time.Millisecond
)

// Pacing limits the background rebuild's rate of a data or parity server:
// with a Pause, one background run is in flight, and the next starts once
// it is rebuilt and Pause per stripe of the run has passed since it
// started (a rate: the pause overlaps the run's own time). Pause is a setting of the host (SetRebuildPause),
// not protocol state: not hashed, not persisted, kept across incarnations.
// Waiting (the server's rebuildPaused timer is pending) is hashed, because
// handlers act on it; it is not persisted, because a restart ends timers
// and Init resumes the rebuild. With Pause 0 (the default) the next run
// starts at once.
//
// Window (a setting too; 0 counts as 1) is how many snapshot runs a data
// server's background rebuild keeps in flight when Pause is 0. Run (a
// setting; 0 counts as 1) is how many stripes one background run covers.
type Pacing struct {
	Pause   time.Duration
	Window  int
	Run     int
	Waiting bool
}

// InFlight is how many background runs may be in flight: one with a
// Pause, else Window.
func (p Pacing) InFlight() int {
	if p.Pause > 0 {
		return 1
	}
	return max(p.Window, 1)
}

// Started notes that a background run of k stripes started: with a Pause,
// the next run waits for timer t, which fires k pauses from now.
func (p *Pacing) Started(ctx node.Context, t node.Timer, k int) {
	if p.Pause > 0 {
		p.Waiting = true
		wait := p.Pause * time.Duration(k)
		ctx.SetTimer(t, wait, wait)
	}
}

// Settings is p without Waiting: what a server's new incarnation keeps
// (the old incarnation's timers end).
func (p Pacing) Settings() Pacing { return Pacing{Pause: p.Pause, Window: p.Window, Run: p.Run} }
