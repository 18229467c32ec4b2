package paxos

import "time"

// Timing holds the protocol's timer settings.
type Timing struct {
	// Heartbeat is the leader's period for heartbeats, retransmissions
	// and log garbage collection.
	Heartbeat time.Duration
	// Election is the base follower timeout; member i waits between
	// (2+i) and (3+i) times Election, so that elections by different
	// members rarely collide (a deterministic backoff, no randomness).
	Election time.Duration
	// Misses is how many election timeouts in a row a follower must see
	// without hearing from a leader before it runs for leader.
	Misses int
	// Retry is the client's base retry timeout (Retry to 2*Retry).
	Retry time.Duration
	// LearnBatch bounds the chosen slots sent in one catch-up message.
	LearnBatch int
}

// DefaultTiming is used for zero fields of a Timing.
var DefaultTiming = Timing{
	Heartbeat:  20 * time.Millisecond,
	Election:   50 * time.Millisecond,
	Misses:     1,
	Retry:      50 * time.Millisecond,
	LearnBatch: 64,
}

// WithDefaults returns t with DefaultTiming's value in every field that
// is zero or negative.
func (t Timing) WithDefaults() Timing {
	d := DefaultTiming
	if t.Heartbeat <= 0 {
		t.Heartbeat = d.Heartbeat
	}
	if t.Election <= 0 {
		t.Election = d.Election
	}
	if t.Misses <= 0 {
		t.Misses = d.Misses
	}
	if t.Retry <= 0 {
		t.Retry = d.Retry
	}
	if t.LearnBatch <= 0 {
		t.LearnBatch = d.LearnBatch
	}
	return t
}

// ElectionTimeout is the range of member i's election timer.
func (t Timing) ElectionTimeout(i int) (lo, hi time.Duration) {
	return t.Election * time.Duration(2+i), t.Election * time.Duration(3+i)
}

// RetryTimeout is the range of a client's retry timer.
func (t Timing) RetryTimeout() (lo, hi time.Duration) { return t.Retry, 2 * t.Retry }
