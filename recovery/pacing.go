package recovery

import (
	"cmp"
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
// started (a rate: the pause overlaps the run's own time). Pause is a
// setting of the host (SetRebuildPause), not protocol state: not hashed, not persisted, kept across incarnations.
// Waiting (the server's rebuildPaused timer is pending) is hashed, because
// handlers act on it; it is not persisted, because a restart ends timers
// and Init resumes the rebuild. With Pause 0 (the default) the next run
// starts at once.
//
// Window (a setting too; 0 counts as 1) is how many snapshot runs a data
// server's background rebuild keeps in flight when Pause is 0. Run (a
// setting; 0 counts as 1) is how many stripes one background run covers.
// Busy (a setting; 0: none) is, when Pause is 0, the pause per stripe by
// which a data server's background run that starts while the server has
// client work delays the next start (runs still overlap, up to Window):
// the rebuild yields to the foreground without stopping. Asked (state,
// hashed like Waiting, not persisted; only tracked with Busy set) is
// whether a client request arrived since the last background run
// started: client work that paces the next run even if it has committed.
// Held (a setting; 0: Run) is how many stripes a data server's run for a
// held request covers.
type Pacing struct {
	Pause   time.Duration
	Window  int
	Run     int
	Held    int
	Busy    time.Duration
	Waiting bool
	Asked   bool
}

// HeldRun is how many stripes a run for a held request covers: Held, or
// Run if Held is 0.
func (p Pacing) HeldRun() int { return cmp.Or(p.Held, p.Run) }

// Settings is p's settings, without its state: what a new incarnation at
// the address keeps (the old incarnation's timers end).
func (p Pacing) Settings() Pacing {
	p.Waiting, p.Asked = false, false
	return p
}

// InFlight is how many background runs may be in flight: one with a
// Pause, else Window.
func (p Pacing) InFlight() int {
	if p.Pause > 0 {
		return 1
	}
	return max(p.Window, 1)
}

// Started notes that a background run of k stripes started: with a Pause
// (or, without one, Busy when the server has client work), the next run
// waits for timer t, which fires k pauses from now. It clears Asked.
func (p *Pacing) Started(ctx node.Context, t node.Timer, k int, busy bool) {
	p.Asked = false
	pause := p.Pause
	if pause == 0 && busy {
		pause = p.Busy
	}
	if pause > 0 {
		p.Waiting = true
		wait := pause * time.Duration(k)
		ctx.SetTimer(t, wait, wait)
	}
}
