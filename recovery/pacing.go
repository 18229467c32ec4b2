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
// Held (a setting; 0: Run) is how many stripes a data server's run for a
// held request covers.
//
// Busy (a setting; 0: none) is, when Pause is 0, the pause per stripe that
// keeps a data server's rebuild, as a whole, to a rate while the server
// has client work: a background run of k stripes that starts then delays
// the next start by k pauses, plus one pause per stripe that runs for held
// requests started since the last background start (Owed). Runs for held
// requests are never delayed (clients wait for them), so the background
// takes what they leave of the rate; Owed counts at most Window times Run
// stripes, so the background slows down but never stops (runs still
// overlap, up to Window). Asked and Owed (state, hashed like Waiting, not
// persisted; only tracked with Busy set) are whether a client request
// arrived since the last background run started (client work that paces
// the next run even if it has committed) and the held requests' stripes
// since then.
type Pacing struct {
	Pause   time.Duration
	Window  int
	Run     int
	Held    int
	Busy    time.Duration
	Waiting bool
	Asked   bool
	Owed    int
}

// HeldRun is how many stripes a run for a held request covers: Held, or
// Run if Held is 0.
func (p Pacing) HeldRun() int { return cmp.Or(p.Held, p.Run) }

// HeldStarted notes that a run of k stripes started for a held request:
// with Busy set, the next background start waits for them too.
func (p *Pacing) HeldStarted(k int) {
	if p.Busy > 0 {
		p.Owed = min(p.Owed+k, p.InFlight()*max(p.Run, 1))
	}
}

// Settings is p's settings, without its state: what a new incarnation at
// the address keeps (the old incarnation's timers end).
func (p Pacing) Settings() Pacing {
	p.Waiting, p.Asked, p.Owed = false, false, 0
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

// Started notes that a background run of k stripes started: with a Pause,
// the next run waits for timer t, which fires k pauses from now; without
// one, when the server has client work, k plus Owed Busy pauses. It
// clears Asked and Owed.
func (p *Pacing) Started(ctx node.Context, t node.Timer, k int, busy bool) {
	pause := p.Pause
	if pause == 0 && busy {
		pause, k = p.Busy, k+p.Owed
	}
	p.Asked, p.Owed = false, 0
	if pause > 0 {
		p.Waiting = true
		wait := pause * time.Duration(k)
		ctx.SetTimer(t, wait, wait)
	}
}
