package runtime

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble"
	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// The batch step. A loop handles a batch of events in three steps, as
// etcd raft's Ready is handled:
//
//  1. collect: run the handlers; their effects, and what the batch
//     changed, go into a ready, and nothing leaves the loop;
//  2. persist: with a store, write the ready's durable part in one pebble
//     batch and commit it (synced when the store is durable);
//  3. release: only then do the effects leave: stream messages go to
//     their senders, handled stream messages are acknowledged, unordered
//     messages are sent and timers set.
//
// Durable before released: nothing a batch produced is visible outside the
// node (a message, an acknowledgement, an ended stream) before the state
// that produced it (the node's Persist writes, its streams' numbering and
// queued messages, the peers it learned) is committed to the store. After
// a crash, the node restarts from that state, and everything it had
// released is explained by it.
//
// Pipelined: with a synced store, persist applies the batch and queues it
// for the WAL's fsync without waiting (pebble's ApplyNoSyncWait), and the
// loop goes on to its next batch; the loop's releaser waits for each
// batch's fsync and then releases it, in batch order (pipeline). Batches
// of every loop of the machine in flight together share the store's
// fsyncs. A batch whose effects nothing waits for is lazy: written
// without a sync, released once a later sync covers it (lazysync.go). A
// crash loses the unsynced batches' state together with their effects,
// which never left.

// hctx is the node.Context of one batch: it collects effects.
type hctx struct {
	self    node.Addr
	sends   []effect
	streams []effect
	timers  []timerEffect
}

type effect struct {
	to node.Addr
	m  node.Message // nil in streams: the stream to to ends here
}

type timerEffect struct {
	t        node.Timer
	min, max time.Duration
}

func (c *hctx) Self() node.Addr                     { return c.self }
func (c *hctx) Send(to node.Addr, m node.Message)   { c.sends = append(c.sends, effect{to, m}) }
func (c *hctx) Stream(to node.Addr, m node.Message) { c.streams = append(c.streams, effect{to, m}) }
func (c *hctx) SetTimer(t node.Timer, min, max time.Duration) {
	c.timers = append(c.timers, timerEffect{t, min, max})
}

// delivered is the last stream message of a batch from one sender.
type delivered struct{ sid, seq uint64 }

// appended is a numbered message for an outgoing stream.
type appended struct {
	o  *outStream
	e  outEntry
	bk backRef // the node record holding the message (streamback.go)
}

// ready is what one batch produced: the state to persist, then the effects
// to release once it is durable.
type ready struct {
	events  int
	start   time.Time
	written time.Time     // persist returned, if stage times are recorded
	epoch   uint64        // the incarnation epoch the batch's timers belong to
	b       *pebble.Batch // applied, its fsync awaited by the releaser; nil if none
	covers  uint64        // with b: the store's lazy batches its fsync covers
	lazy    bool          // written without a sync (lazysync.go)
	ticket  uint64        // if lazy: its number among the store's lazy batches
	// early: a lazy batch that handled only node.EarlySends messages,
	// whose sends may leave before it is durable; sent says they have
	// (lazysync.go, early sends).
	early, sent bool
	// carried: written into the loop's open batch, applied and released
	// with its next one (carry.go); before are the carried batches this
	// one applied, released first; flush: the batch that applies them
	// when no other came.
	carried, flush bool
	before         []*ready
	// Durable part (with the node's own Persist writes).
	inc     incChanges              // ended incarnations and streams, learned peers
	acks    map[node.Addr]delivered // stream messages handled
	appends []appended              // stream messages, numbered
	streams map[*outStream]bool     // outgoing streams appended to
	// Released once durable (with appends and acks).
	sends  []effect
	timers []timerEffect
	// ahead are the unordered messages the node lets leave before the
	// batch is durable (node.EarlySender): sent once it is persisted.
	ahead []effect
	// handled names the kinds of events the batch handled, when sync
	// causes are counted (synccause.go).
	handled kinds
}

// process runs one batch: collect, persist, release. With restart, the
// batch is one message that starts a new incarnation here: the old
// incarnation's streams, timers and stored state end first
// (incarnation.go).
func (l *loop) process(batch []event, restart bool) {
	start := time.Now()
	timed := stageTimes.on.Load()
	if timed {
		for _, ev := range batch {
			stageSince("inbox "+role(l.addr), ev.posted)
		}
	}
	rd := l.collect(batch, restart)
	rd.start = start
	l.persist(rd)
	if rd.carried {
		return // released with the batch that applies it
	}
	if l.h.ctx.Err() == nil {
		for _, s := range rd.ahead { // after every earlier batch's (lazysync.go)
			l.h.send(l.addr, s.to, s.m)
		}
	}
	if timed {
		stageSince("handle+write "+role(l.addr), start)
		rd.written = time.Now()
	}
	if l.pipe != nil {
		l.toPipe(rd) // released once durable (pipeline)
		return
	}
	l.release(rd)
	l.h.opts.Metrics.BatchCommitted(rd.events, time.Since(start))
}

// pipeline is a loop's releaser with a synced store: it waits for each
// batch's fsync and releases the batch, in the order the loop persisted
// them. Once the host stops it only waits, so that the store is not
// closed under an fsync.
//
// A lazy batch waits in held until a sync covers it: the fsync of a later
// synced batch of this loop (waited for out of turn) or of any other loop
// of the store, or the store's background sync. The batches behind it
// wait with it.
func (l *loop) pipeline() {
	defer l.h.wg.Done()
	st := l.h.opts.Store
	var held []*ready
	for {
		var wake <-chan struct{}
		for len(held) > 0 {
			rd := held[0]
			if rd.lazy {
				ok, ch := st.durableLazy(rd.ticket)
				if !ok {
					l.sendEarly(held)
					i := slices.IndexFunc(held, func(r *ready) bool { return r.b != nil })
					if i < 0 {
						wake = ch
						break
					}
					l.syncWait(held[i]) // covers rd
					continue
				}
			}
			l.syncWait(rd)
			held = held[1:]
			if l.h.ctx.Err() != nil {
				l.piped.add(-1)
				continue
			}
			if !rd.written.IsZero() {
				stageSince(durableStage(l.addr, rd.lazy), rd.written)
			}
			l.release(rd)
			l.piped.add(-1)
			if !rd.early {
				l.unearly.Add(-1)
			}
			l.h.opts.Metrics.BatchCommitted(rd.events, time.Since(rd.start))
		}
		select {
		case rd, ok := <-l.pipe:
			if !ok { // the host stopped: wait for the fsyncs, release nothing
				for _, r := range held {
					l.syncWait(r)
					l.piped.add(-1)
				}
				return
			}
			held = append(held, rd)
		case <-wake:
		}
	}
}

// toPipe hands a persisted batch to the loop's releaser.
func (l *loop) toPipe(rd *ready) {
	l.piped.add(1)
	if !rd.early {
		l.unearly.Add(1)
	}
	l.pipe <- rd
}

// sendEarly lets the sends of the early batches at the head of held leave
// (lazysync.go, early sends): every earlier batch is released, and if a
// crash loses them it loses these early batches only, which handled
// nothing but node.EarlySends messages.
func (l *loop) sendEarly(held []*ready) {
	for _, rd := range held {
		if !rd.early || l.h.ctx.Err() != nil {
			return
		}
		if !rd.sent {
			l.send(rd)
		}
	}
}

// syncWait waits for a synced batch's fsync, once, and records the lazy
// batches it covered.
func (l *loop) syncWait(rd *ready) {
	if rd.b == nil {
		return
	}
	if err := rd.b.SyncWait(); err != nil {
		panic(fmt.Sprintf("runtime: %s: syncing a batch: %v", l.addr, err))
	}
	_ = rd.b.Close()
	rd.b = nil
	l.h.opts.Store.markDurable(rd.covers)
}

// collect runs the batch's handlers and gathers what they produced.
func (l *loop) collect(batch []event, restart bool) *ready {
	ctx := &hctx{self: l.addr}
	rd := &ready{events: len(batch)}
	if restart {
		rd.inc = l.endIncarnation()
	}
	counting := causes.on.Load()
	l.spec, l.specEvs = nil, nil
	early := !restart
	for _, ev := range batch {
		early = early && earlyEvent(ev)
		if counting {
			switch {
			case ev.fn != nil:
				rd.handled.add("fn")
			case ev.t != nil:
				rd.handled.add("timer")
			case ev.retry:
				rd.handled.add("retry")
			default:
				rd.handled.add(kindOf(ev.m))
			}
		}
		switch {
		case ev.fn != nil:
			l.spec, l.specEvs = nil, nil
			ev.fn(ctx, l.n)
		case ev.t != nil:
			if ev.epoch != l.epoch {
				continue // set by an incarnation that ended
			}
			l.spec, l.specEvs = nil, nil
			mark := len(ctx.streams)
			l.n.Timer(ctx, ev.t)
			l.learn(ctx, mark, rd)
		case ev.retry:
			l.retrying = false
			held := l.held
			l.held = nil
			for _, e := range held {
				l.handle(ctx, rd, e)
			}
		default:
			l.handle(ctx, rd, ev)
		}
	}
	if restart && l.pers != nil {
		l.pers.TrackChanges() // the new state is written whole
	}
	l.noteIncarnation()
	rd.epoch = l.epoch
	l.number(ctx.streams, rd)
	rd.sends, rd.timers = ctx.sends, ctx.timers
	if es, ok := l.n.(node.EarlySender); ok {
		rd.ahead, rd.sends = splitEarly(es, rd.sends)
	}
	rd.lazy = l.pipe != nil && lazyBatch(rd, ctx.streams, early)
	rd.early = rd.lazy && early
	return rd
}

// handle applies a message, unless the immediate check holds it.
func (l *loop) handle(ctx *hctx, rd *ready, ev event) {
	if ev.seq > 0 && !l.current(ev.from, ev.sid) {
		return // a stream that ended with its sender's incarnation
	}
	refused, first := l.refuses(ev)
	if refused {
		return
	}
	for _, e := range append(first, ev) {
		if e.seq > 0 && !l.current(e.from, e.sid) {
			continue
		}
		l.apply(ctx, rd, e)
	}
}

// apply handles a message.
func (l *loop) apply(ctx *hctx, rd *ready, ev event) {
	l.spec, l.specEvs = nil, nil // the node changes
	mark := len(ctx.streams)
	l.n.Handle(ctx, ev.from, ev.m)
	l.learn(ctx, mark, rd)
	if ev.seq > 0 {
		if rd.acks == nil {
			rd.acks = map[node.Addr]delivered{}
		}
		rd.acks[ev.from] = delivered{ev.sid, ev.seq}
	}
}

// number gives the batch's stream messages their stream and sequence
// numbers; a nil message ends the stream to its address first.
//
// A message streamed to several peers in a row is encoded once and
// shares one stream log record (streamlog.go).
func (l *loop) number(streams []effect, rd *ready) {
	var prev node.Message
	var prevP *wire.Message
	var prevSize int
	var prevBk backRef
	for _, s := range streams {
		if s.m == nil { // the peer's incarnation changed: a new stream
			prev = nil
			if o := l.dropOut(s.to); o != nil {
				rd.inc.ended = append(rd.inc.ended, o)
				delete(rd.streams, o)
				rd.appends = slices.DeleteFunc(rd.appends, func(a appended) bool {
					if a.o == o {
						l.log.unref([]outEntry{a.e})
					}
					return a.o == o
				})
			}
			continue
		}
		o := l.outStream(s.to)
		if !sameMessage(prev, s.m) {
			p, err := wire.MessageToProto(s.m)
			if err != nil {
				panic(fmt.Sprintf("runtime: %s streams an unencodable message: %v", l.addr, err))
			}
			prev, prevP, prevSize = s.m, p, proto.Size(p)
			prevBk = l.backing(s.m)
			l.nextBody++
		}
		rd.appends = append(rd.appends, appended{o, outEntry{seq: o.next, m: prevP, size: prevSize, body: l.nextBody - 1}, prevBk})
		if l.h.opts.Store != nil {
			l.log.ref(l.nextBody - 1)
		}
		o.next++
		if rd.streams == nil {
			rd.streams = map[*outStream]bool{}
		}
		rd.streams[o] = true
	}
}

// persist makes the ready's durable part durable: one pebble batch,
// committed before persist returns, or with a synced store applied and
// left in rd.b for the pipeline to wait for its fsync. Without a store it
// does nothing.
func (l *loop) persist(rd *ready) {
	st := l.h.opts.Store
	if st == nil {
		return
	}
	b := l.batch(st)
	rd.inc.write(b, l.addr)
	if l.pers != nil {
		l.pers.Persist(st.writer(b, l.addr, &l.enc, l))
	}
	for from, d := range rd.acks {
		v := pair(d.sid, d.seq)
		s := l.inStream(from)
		s.mu.Lock()
		if s.sid == d.sid {
			v = binary.BigEndian.AppendUint64(v, s.fromInc)
		}
		s.mu.Unlock()
		_ = b.Set(inKey(l.addr, from), v, nil)
	}
	for o := range rd.streams {
		_ = b.Set(outMetaKey(l.addr, o.to), pair(o.sid, o.next), nil)
	}
	l.writeAppends(b, rd.appends)
	if b.Empty() {
		_ = b.Close()
		rd.lazy, rd.early = false, false // nothing to wait for
		return
	}
	l.forgetAcked(b)
	carried := l.mayCarry(rd)
	if causes.on.Load() && !rd.flush {
		countCause(batchCause(l.addr, rd.handled, rd, carried))
	}
	if carried {
		l.carryOn(b, rd)
		return
	}
	l.takeCarried(rd)
	var err error
	switch {
	case rd.lazy:
		rd.ticket, err = st.applyLazy(b)
		_ = b.Close()
	case l.pipe != nil:
		rd.covers = st.covered()
		err = st.db.ApplyNoSyncWait(b, pebble.Sync)
		rd.b = b
	default:
		err = b.Commit(st.writeOpts())
		_ = b.Close()
	}
	if err != nil {
		// The node's state is ahead of the disk: it must not send
		// anything more. Crash.
		panic(fmt.Sprintf("runtime: %s: committing a batch: %v", l.addr, err))
	}
}

// send lets the ready's unordered messages leave: when it is released, or
// before, for early sends (lazysync.go).
func (l *loop) send(rd *ready) {
	for _, s := range rd.sends {
		l.h.send(l.addr, s.to, s.m)
	}
	rd.sent = true
}

// release lets the ready's effects leave, once persist has returned.
func (l *loop) release(rd *ready) {
	l.releaseCarried(rd)
	for _, o := range rd.inc.ended {
		o.stop()
	}
	// Acknowledgements first, so that the frames the pushes wake carry
	// them (stream.go, frame).
	for from, d := range rd.acks {
		l.inStream(from).setPersisted(d.sid, d.seq)
	}
	for _, a := range rd.appends {
		a.o.push(a.e)
	}
	if !rd.sent {
		l.send(rd)
	}
	for _, t := range rd.timers {
		l.setTimer(t, rd.epoch)
	}
}
