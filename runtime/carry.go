package runtime

import (
	"time"

	"github.com/cockroachdb/pebble"
)

// Carried batches. With a synced store, a lazy batch that sends nothing
// unordered (a data server's batch that took one PREPARE-OK of two, a
// parity server's COMMIT and PREPARE-DROP), or an early one whose sends
// may leave at once (a data server's commit batch and its replies, when
// the loop's earlier batches are released or early), is not applied on
// its own: its writes stay in the loop's open pebble batch, which the
// loop's next batch writes into as well and applies, so that one apply
// (one WAL record and one pass through pebble's commit pipeline) serves
// both. The carried batches are released just before the batch that
// applied them, once it is durable; if no batch follows within
// carryDelay, the loop applies them lazily on their own (flushCarry), and
// the store's background sync covers them as it covers any lazy batch.
//
// This moves no durability line. A carried batch's effects are stream
// messages and acknowledgements, and they leave only with the batch that
// applied it, after its sync: a crash before then loses the carried
// batches as it loses a lazy batch no sync covered yet, and their stream
// messages are redelivered. An early batch (lazysync.go) that applies
// carried batches sends its replies early only if every batch it carries
// is early too. Batches of other loops on the same store do not wait for
// carried ones: nothing they could have seen has left.

// carryDelay is how long a loop keeps carried batches when no other batch
// comes. A variable for tests only.
var carryDelay = 5 * time.Millisecond

// carry holds a loop's carried batches: the open pebble batch with their
// writes and their readies, in order. Loop goroutine only.
type carry struct {
	b       *pebble.Batch
	readies []*ready
	timer   *time.Timer
	delay   time.Duration // carryDelay when the loop started
}

// batch returns the pebble batch a batch of the loop writes into: the
// open one if batches are carried, else a new one.
func (l *loop) batch(st *Store) *pebble.Batch {
	if l.carry.b != nil {
		return l.carry.b
	}
	return st.db.NewBatch()
}

// mayCarry reports whether rd, written into b, may wait for the loop's
// next batch: it is lazy, sends nothing ahead, is not the flush of
// carried batches, and sends nothing unordered unless it is early and
// its sends may leave now: every batch of the loop before it is released
// or early (lazysync.go, early sends).
func (l *loop) mayCarry(rd *ready) bool {
	if l.pipe == nil || !rd.lazy || rd.flush || len(rd.ahead) > 0 {
		return false
	}
	if len(rd.sends) == 0 {
		return true
	}
	if !rd.early || l.unearly.Load() > 0 {
		return false
	}
	for _, cr := range l.carry.readies {
		if !cr.early {
			return false
		}
	}
	return true
}

// carryOn keeps rd, written into b, for the loop's next batch; an early
// batch's sends leave now.
func (l *loop) carryOn(b *pebble.Batch, rd *ready) {
	if len(rd.sends) > 0 && l.h.ctx.Err() == nil {
		l.send(rd)
	}
	c := &l.carry
	if c.b == nil {
		if c.timer == nil {
			c.timer = time.NewTimer(c.delay)
		} else {
			c.timer.Reset(c.delay)
		}
	}
	c.b = b
	c.readies = append(c.readies, rd)
	rd.carried = true
}

// takeCarried hands the carried batches to rd, whose apply writes them:
// they are released before it. rd stays early only if they all are.
func (l *loop) takeCarried(rd *ready) {
	c := &l.carry
	if c.b == nil {
		return
	}
	for _, cr := range c.readies {
		rd.early = rd.early && cr.early
	}
	rd.before = c.readies
	c.b, c.readies = nil, nil
	c.timer.Stop()
}

// flushC is the channel that fires when the carried batches have waited
// carryDelay; nil when none is carried.
func (l *loop) flushC() <-chan time.Time {
	if l.carry.b == nil {
		return nil
	}
	return l.carry.timer.C
}

// flushCarry applies the carried batches lazily, in an empty batch of
// their own.
func (l *loop) flushCarry() {
	if l.carry.b == nil {
		return
	}
	rd := &ready{lazy: true, flush: true, start: time.Now()}
	l.persist(rd)
	l.toPipe(rd)
}

// releaseCarried releases the batches rd applied for the loop before it.
func (l *loop) releaseCarried(rd *ready) {
	for _, cr := range rd.before {
		l.release(cr)
		l.h.opts.Metrics.BatchCommitted(cr.events, time.Since(cr.start))
	}
	rd.before = nil
}

// applyCarried writes the carried batches without releasing them, as the
// host stops: a clean stop keeps what the loop handled, as it keeps the
// lazy batches (closing the store syncs its WAL).
func (l *loop) applyCarried() {
	c := &l.carry
	if c.b == nil {
		return
	}
	if err := l.h.opts.Store.db.Apply(c.b, pebble.NoSync); err != nil {
		l.h.log.Error("writing carried batches as the host stops", "node", l.addr, "err", err)
	}
	_ = c.b.Close()
	c.b, c.readies = nil, nil
	c.timer.Stop()
}
