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

// DefaultTiming is used for the unset (zero or negative) fields of a Timing.
var DefaultTiming = Timing{
	Heartbeat:  20 * time.Millisecond,
	Election:   50 * time.Millisecond,
	Misses:     1,
	Retry:      50 * time.Millisecond,
	LearnBatch: 64,
}

// WithDefaults returns t with DefaultTiming's value in every field that
// is zero or negative.
func (t Timing) WithDefaults() Timing { return t.Or(DefaultTiming) }

// Or returns t with d's value in every field that t leaves unset (zero or
// negative).
func (t Timing) Or(d Timing) Timing {
	t.Heartbeat = orPositive(t.Heartbeat, d.Heartbeat)
	t.Election = orPositive(t.Election, d.Election)
	t.Misses = orPositive(t.Misses, d.Misses)
	t.Retry = orPositive(t.Retry, d.Retry)
	t.LearnBatch = orPositive(t.LearnBatch, d.LearnBatch)
	return t
}

// orPositive is v if it is positive, else d.
func orPositive[T int | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// ElectionTimeout is the range of member i's election timer.
func (t Timing) ElectionTimeout(i int) (lo, hi time.Duration) {
	return t.Election * time.Duration(2+i), t.Election * time.Duration(3+i)
}

// RetryTimeout is the range of a client's retry timer.
func (t Timing) RetryTimeout() (lo, hi time.Duration) { return t.Retry, 2 * t.Retry }
