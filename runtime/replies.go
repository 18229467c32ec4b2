package runtime

import (
	"slices"
	"strings"
	"sync"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Replies to the client API's callers. Execute hands a request to the
// local data server as coming from "client/<id>"; the server's reply is an
// unordered message to that address, which the machine takes before it
// reaches the transport (Options.Local). The host itself reads no protocol
// message: replies are the client API's business.

// waitKey identifies a reply a local RPC waits for: client addresses are
// "client/<id>", and replies carry the request's sequence number.
type waitKey struct {
	to  node.Addr
	seq uint64
}

// replies routes msg.Reply messages to the RPCs waiting for them.
type replies struct {
	mu      sync.Mutex
	waiters map[waitKey][]chan node.Message
}

// Wait registers interest in the reply to seq sent to address to. The
// returned channel receives it; cancel must be called when done.
func (r *replies) Wait(to node.Addr, seq uint64) (<-chan node.Message, func()) {
	ch := make(chan node.Message, 1)
	k := waitKey{to, seq}
	r.mu.Lock()
	if r.waiters == nil {
		r.waiters = map[waitKey][]chan node.Message{}
	}
	r.waiters[k] = append(r.waiters[k], ch)
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		ws := r.waiters[k]
		for i, w := range ws {
			if w == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(r.waiters, k)
		} else {
			r.waiters[k] = ws
		}
	}
}

// takeReply is Options.Local: it takes every message to a client address,
// handing replies to their waiters.
func (r *replies) takeReply(_, to node.Addr, m node.Message) bool {
	if !strings.HasPrefix(string(to), "client/") {
		return false
	}
	rep, ok := m.(msg.Reply)
	if !ok {
		return true
	}
	r.mu.Lock()
	ws := slices.Clone(r.waiters[waitKey{to, rep.Seq}]) // cancel edits the slice in place
	r.mu.Unlock()
	for _, w := range ws {
		select {
		case w <- m:
		default:
		}
	}
	return true
}
