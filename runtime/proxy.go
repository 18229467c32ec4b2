package runtime

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/amalgam-store/amalgam/node"
)

// ClientNode is a protocol client node that RunClient can drive: it runs
// a script and says when it has every reply.
type ClientNode interface {
	node.Node
	Done() bool
}

// RunClient runs client node n at address a on the calling goroutine
// until it is done, ctx ends or the host stops. Messages to a reach it
// wherever they are sent from: a's machine must resolve to this host
// (Options.Resolve) for remote nodes to answer it. Its timers are
// wall-clock timers; nothing is persisted. The baselines' machines use it
// to run their protocols' clients for outside requests (baseline.go).
func (h *Host) RunClient(ctx context.Context, a node.Addr, n ClientNode) error {
	mb := make(chan event, 1024)
	h.mu.Lock()
	if _, dup := h.mailboxes[a]; dup || h.loops[a] != nil {
		h.mu.Unlock()
		return errors.New("runtime: client address " + string(a) + " is in use")
	}
	h.mailboxes[a] = mb
	h.nmail.Add(1)
	h.mu.Unlock()
	pc := &proxyCtx{h: h, self: a, timers: make(chan node.Timer, 64), done: make(chan struct{})}
	defer func() {
		h.mu.Lock()
		delete(h.mailboxes, a)
		h.nmail.Add(-1)
		h.mu.Unlock()
		pc.stop()
	}()
	n.Init(pc)
	for !n.Done() {
		select {
		case ev := <-mb:
			n.Handle(pc, ev.from, ev.m)
		case t := <-pc.timers:
			n.Timer(pc, t)
		case <-ctx.Done():
			return ctx.Err()
		case <-h.ctx.Done():
			return errors.New("runtime: host stopped")
		}
	}
	return nil
}

// toMailbox hands m to the RunClient client at to, if there is one here.
// Like any unordered message, it is dropped when the client is behind.
func (h *Host) toMailbox(from, to node.Addr, m node.Message) bool {
	if h.nmail.Load() == 0 {
		return false
	}
	h.mu.Lock()
	mb, ok := h.mailboxes[to]
	h.mu.Unlock()
	if ok {
		select {
		case mb <- event{from: from, m: m}:
		default:
		}
	}
	return ok
}

// proxyCtx is the node.Context of a RunClient client: sends go out at
// once, timers fire into the client's loop.
type proxyCtx struct {
	h      *Host
	self   node.Addr
	timers chan node.Timer
	done   chan struct{}

	mu      sync.Mutex
	pending []*time.Timer
}

func (c *proxyCtx) Self() node.Addr                     { return c.self }
func (c *proxyCtx) Send(to node.Addr, m node.Message)   { c.h.send(c.self, to, m) }
func (c *proxyCtx) Stream(to node.Addr, m node.Message) { c.h.send(c.self, to, m) }

func (c *proxyCtx) SetTimer(t node.Timer, min, max time.Duration) {
	d := min
	if max > min {
		d += rand.N(max - min)
	}
	tm := time.AfterFunc(d, func() {
		select {
		case c.timers <- t:
		case <-c.done:
		}
	})
	c.mu.Lock()
	c.pending = append(c.pending, tm)
	c.mu.Unlock()
}

func (c *proxyCtx) stop() {
	close(c.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.pending {
		t.Stop()
	}
}
