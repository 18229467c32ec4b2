package runtime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// event is one thing a node's loop handles: a message (unordered, or from
// a stream when seq > 0), a timer, or a function run on the node.
type event struct {
	from     node.Addr
	m        node.Message
	t        node.Timer
	epoch    uint64 // for timers: the incarnation epoch that set it
	fn       func(node.Context, node.Node)
	sid, seq uint64    // for stream messages: the stream and sequence number
	held     time.Time // when the immediate check first postponed it (immediate.go)
	hid      uint64    // a held message's id
	retry    bool      // retry the held messages
	posted   time.Time // when posted, if stage times are recorded (stagetimes.go)
}

// loop is one node's event loop. Only its goroutine touches the node.
type loop struct {
	h     *Host
	addr  node.Addr
	n     node.Node
	pers  node.Persistent // nil unless persisted
	inbox chan event
	// pipe holds the batches persisted and not yet released, with a
	// synced store (batch.go); nil otherwise. piped counts them.
	pipe  chan *ready
	piped pipeCount
	// unearly counts the batches in the pipe that are not early
	// (lazysync.go, early sends; carry.go).
	unearly atomic.Int64

	mu  sync.Mutex
	in  map[node.Addr]*inStream
	out map[node.Addr]*outStream // written by the loop only
	// ackOut is the latest outgoing stream to each peer, for the
	// acknowledgements that ride on the peer's frames (ServeStream); a
	// dropped stream's entry stays until a new stream replaces it (its
	// stream id no longer matches). Guarded by mu.
	ackOut map[node.Addr]*outStream
	// nextBody numbers the stream log's records (loop goroutine only);
	// log counts their holders (streamlog.go).
	nextBody uint64
	log      streamLog
	backs    backings // log records backed by the node's (streamback.go)
	// enc is the buffer the node's Persist encodes its records into
	// (node.EncFor). Loop goroutine only.
	enc node.Enc
	// peerInc is the newest incarnation of each peer that this node
	// addresses (node.Peered, incarnation.go); guarded by mu.
	peerInc map[node.Addr]uint64
	// peerVer is the node's PeerVersion when peerInc was last updated.
	// Loop goroutine only.
	peerVer uint64
	// inc is the node's incarnation (node.Incarnated; 0 if it has none).
	inc atomic.Uint64
	// epoch counts the incarnations started here; timers set by an older
	// one are dropped. Loop goroutine only.
	epoch uint64
	snaps snapshots // snapshot requests (snapshot.go)
	// held are the messages the immediate check postponed, in order;
	// retrying says a retry is posted (immediate.go). Loop goroutine only,
	// like spec.
	held     []event
	retrying bool
	nextHid  uint64
	// spec is the node with this batch's refused messages (specEvs)
	// applied, nil if none or the node changed since (immediate.go).
	spec    node.Node
	specEvs []event
	carry   carry // batches written with the next one (carry.go)
}

// start starts the loop's goroutine and its streams' senders. The caller
// holds h.mu.
func (l *loop) start() {
	l.carry.delay = carryDelay
	for _, o := range l.out {
		o.start()
	}
	l.h.wg.Add(1)
	go l.run()
	if l.pipe != nil {
		l.h.wg.Add(1)
		go l.pipeline()
	}
}

func (l *loop) post(ctx context.Context, ev event) error {
	ev.posted = stageNow()
	select {
	case l.inbox <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-l.h.ctx.Done():
		return errors.New("host stopped")
	}
}

// maxBatch bounds the events one batch handles.
const maxBatch = 256

// pipeDepth bounds the batches of a loop persisted and not yet released.
const pipeDepth = 64

// run is the event loop: Init, then batches of whatever the inbox holds.
func (l *loop) run() {
	defer l.h.wg.Done()
	if l.pipe != nil {
		defer close(l.pipe)
	}
	batch := []event{{fn: func(ctx node.Context, n node.Node) { n.Init(ctx) }}}
	for {
		l.processAll(batch)
		l.serveSnapshots()
		batch = batch[:0]
	wait:
		for {
			select {
			case ev := <-l.inbox:
				batch = append(batch, ev)
				break wait
			case <-l.flushC():
				l.flushCarry()
			case <-l.h.ctx.Done():
				l.applyCarried()
				return
			}
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case ev := <-l.inbox:
				batch = append(batch, ev)
			default:
				break drain
			}
		}
	}
}
