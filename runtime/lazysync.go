package runtime

import (
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/amalgam-store/amalgam/node"
)

// Lazy batches. With a synced store, a batch whose only effects are
// unhurried stream messages (node.Unhurried: COMMIT, PREPARE-DROP) and the
// acknowledgements of the stream messages it handled is written without
// a sync: nothing waits for those effects, so the fsync that would make
// them durable is not worth having on its own. The batch is still durable
// before released: its effects leave once a later sync covers it. Pebble's
// WAL is written in commit order, so a synced batch applied after a lazy
// one makes the lazy one durable too: any loop's next synced batch on the
// same store covers it, and a background sync (lazyDelay after the first
// uncovered lazy batch) covers it when no synced batch comes.
//
// Early sends. A batch that handled only stream messages of kinds that
// implement node.EarlySends (a data server's PREPARE-OKs) and is lazy but
// for its unordered messages (the replies of the operations it committed)
// is an early batch: lazy too, and its unordered messages leave before it
// is durable, as soon as every batch of the loop before it is released or
// is an early batch itself; its stream messages and acknowledgements
// still wait for the sync. A crash that loses it loses only early batches
// with it, and the acknowledgements of the messages they handled, so
// those come again after the restart, and the node, restarted from the
// state before the first of them, sends the same (the model checker's
// crashes of mc.State.SendsBeforeDurableOn).
//
// Sends ahead. A node that implements node.EarlySender names some of its
// unordered messages (a Multi-Paxos leader's accept requests) that may
// leave before their batch is durable: the loop sends them as soon as it
// has persisted the batch (applied, not yet synced), so after those of
// every earlier batch, and the batch keeps everything else, its other
// unordered messages included, until it is durable as usual. They do not
// make a batch synced or lazy: only its other effects decide. A crash
// loses a suffix of the node's batches whose messages ahead may have
// left; the node's SendsEarly answers for that (the model checker's
// mc.State.LagOn).
//
// A crash loses the lazy batches not yet covered, as it loses synced
// batches whose fsync had not returned: nothing they produced has left
// but early sends, their stream messages are redelivered (their
// acknowledgement had not left either) and their unordered messages are
// lost, as if the crash had come before the batch.

// lazyDelay is how long an uncovered lazy batch waits for a synced batch
// before the store syncs for it. Only the acknowledgements, COMMITs and
// PREPARE-DROPs of lazy batches wait: no reply does (a reply of a lazy
// batch is an early send). A variable for tests only.
var lazyDelay = 20 * time.Millisecond

// lazySyncs tracks a store's lazy batches: applied counts those written,
// durable those known to be covered by a sync.
type lazySyncs struct {
	mu      sync.Mutex
	applied uint64
	durable uint64
	changed chan struct{} // closed when durable grows
	kick    chan struct{} // wakes the background syncer
	stop    chan struct{}
	done    chan struct{}
	delay   time.Duration // lazyDelay, but in tests
}

func (z *lazySyncs) init(delay time.Duration) {
	z.delay = delay
	z.changed = make(chan struct{})
	z.kick = make(chan struct{}, 1)
	z.stop = make(chan struct{})
	z.done = make(chan struct{})
}

// applyLazy writes b without a sync and returns its ticket.
func (s *Store) applyLazy(b *pebble.Batch) (uint64, error) {
	if err := s.db.Apply(b, pebble.NoSync); err != nil {
		return 0, err
	}
	z := &s.lazy
	z.mu.Lock()
	z.applied++
	t := z.applied
	z.mu.Unlock()
	select {
	case z.kick <- struct{}{}:
	default:
	}
	return t, nil
}

// covered is how many lazy batches a sync of a batch applied from now on
// covers: every one applied so far.
func (s *Store) covered() uint64 {
	s.lazy.mu.Lock()
	defer s.lazy.mu.Unlock()
	return s.lazy.applied
}

// markDurable records that a sync covered the first c lazy batches.
func (s *Store) markDurable(c uint64) {
	z := &s.lazy
	z.mu.Lock()
	defer z.mu.Unlock()
	if c > z.durable {
		z.durable = c
		close(z.changed)
		z.changed = make(chan struct{})
	}
}

// durableLazy reports whether lazy batch t is durable, and if not a
// channel closed when that may have changed.
func (s *Store) durableLazy(t uint64) (bool, <-chan struct{}) {
	z := &s.lazy
	z.mu.Lock()
	defer z.mu.Unlock()
	return t <= z.durable, z.changed
}

// syncLazily is the store's background syncer: lazyDelay after a lazy
// batch, if synced batches have not covered it meanwhile, it syncs the WAL
// (an empty synced record) itself, covering every lazy batch so far.
func (s *Store) syncLazily() {
	z := &s.lazy
	defer close(z.done)
	for {
		select {
		case <-z.kick:
		case <-z.stop:
			return
		}
		z.mu.Lock()
		waiting := z.applied // the lazy batches waiting from now on
		z.mu.Unlock()
		select {
		case <-time.After(z.delay):
		case <-z.stop:
			return
		}
		z.mu.Lock()
		c, pending := z.applied, waiting > z.durable
		z.mu.Unlock()
		if !pending {
			continue // covered meanwhile; later ones kicked again
		}
		if causes.on.Load() {
			countCause("store background sync")
		}
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			panic(fmt.Sprintf("runtime: syncing the store: %v", err))
		}
		s.markDurable(c)
	}
}

// lazyBatch reports whether a batch's effects may wait for a later sync:
// it ends no stream, learns no incarnation, sets no timer, streams only
// unhurried messages, and sends nothing unordered unless early says that
// its unordered messages may leave before it is durable.
func lazyBatch(rd *ready, streamed []effect, early bool) bool {
	if len(rd.sends) > 0 && !early || len(rd.timers) > 0 || !rd.inc.empty() {
		return false
	}
	for _, s := range streamed {
		if _, ok := s.m.(node.Unhurried); !ok {
			return false
		}
	}
	return true
}

// earlyEvent reports whether ev is a stream message whose handler's
// unordered messages may leave before its batch is durable
// (node.EarlySends).
func earlyEvent(ev event) bool {
	if ev.seq == 0 || ev.fn != nil || ev.t != nil || ev.retry {
		return false
	}
	_, ok := ev.m.(node.EarlySends)
	return ok
}

func (c *incChanges) empty() bool {
	return !c.wipe && len(c.outs) == 0 && len(c.ins) == 0 && len(c.peers) == 0 && len(c.ended) == 0
}

// splitEarly splits a batch's unordered messages into those es lets leave
// before the batch is durable and the rest, each in order.
func splitEarly(es node.EarlySender, sends []effect) (ahead, rest []effect) {
	for _, s := range sends {
		if es.SendsEarly(s.m) {
			ahead = append(ahead, s)
		} else {
			rest = append(rest, s)
		}
	}
	return ahead, rest
}
