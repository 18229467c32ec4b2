package runtime

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// opNums notes the OpNum of every Commit it receives.
type opNums struct {
	mu   sync.Mutex
	seen map[uint64]bool
}

func (r *opNums) Init(node.Context) {}
func (r *opNums) Handle(_ node.Context, _ node.Addr, m node.Message) {
	r.mu.Lock()
	r.seen[m.(msg.Commit).OpNum] = true
	r.mu.Unlock()
}
func (r *opNums) Timer(node.Context, node.Timer) {}
func (r *opNums) Clone() node.Node               { return r }
func (r *opNums) Hash() uint64                   { return 0 }

func (r *opNums) has(n uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[n]
}

// sendCounter counts the connections and Sends of a gRPC transport.
type sendCounter struct {
	*grpcTransport
	opens, sends atomic.Int64
}

func (c *sendCounter) SendStream(ctx context.Context, addr string) (SendConn, error) {
	c.opens.Add(1)
	return c.grpcTransport.SendStream(ctx, addr)
}

func (c *sendCounter) Send(ctx context.Context, addr string, envs []*wire.Envelope) error {
	c.sends.Add(1)
	return c.grpcTransport.Send(ctx, addr, envs)
}

// TestUnorderedSendStream sends unordered messages from one host to
// another over one send stream, stops the receiving host, and starts it
// again at the same address: messages sent while it is down are dropped
// and counted, with at most one connection attempt each, and those sent
// once it is back arrive.
func TestUnorderedSendStream(t *testing.T) {
	lnA, _ := net.Listen("tcp", "127.0.0.1:0")
	lnB, _ := net.Listen("tcp", "127.0.0.1:0")
	addrB := lnB.Addr().String()
	resolve := func(a node.Addr) (string, bool) {
		if a == "parity/1" {
			return addrB, true
		}
		return lnA.Addr().String(), true
	}
	optsA := Options{Listener: lnA, Resolve: resolve, BlockSize: 64}
	a := NewHost(optsA)
	tr := &sendCounter{grpcTransport: newGRPCTransport(optsA, a.log)}
	a.tr = tr
	a.Start()
	defer a.Stop()
	startB := func(ln net.Listener) (*Host, *opNums) {
		r := &opNums{seen: map[uint64]bool{}}
		b := NewHost(Options{Listener: ln, Resolve: resolve, BlockSize: 64})
		if err := b.AddNode("parity/1", r); err != nil {
			t.Fatal(err)
		}
		b.Start()
		return b, r
	}
	b, rec := startB(lnB)
	send := func(n uint64) { a.send("data/0", "parity/1", msg.Commit{OpNum: n}) }
	stop := time.Now().Add(2 * time.Minute) // a hang guard only
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if time.Now().After(stop) {
				t.Fatalf("gave up waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	// Fewer messages than the receiver's inbox holds: none is dropped.
	const n = 500
	before := TransportStats()
	for i := uint64(1); i <= n; i++ {
		send(i)
	}
	waitFor("the first messages", func() bool {
		for i := uint64(1); i <= n; i++ {
			if !rec.has(i) {
				return false
			}
		}
		return true
	})
	// The sender counts a batch once its Send returned, which may be after
	// the receiver took it: wait until every message is counted, sent or
	// dropped.
	waitFor("the sender's counts", func() bool {
		s := TransportStats()
		return s.SendMsgs+s.SendDrops-before.SendMsgs-before.SendDrops >= n
	})
	after := TransportStats()
	if o, s := tr.opens.Load(), tr.sends.Load(); o != 1 || s != 0 {
		t.Fatalf("%d messages took %d send streams and %d Sends, want 1 stream", n, o, s)
	}
	if got := after.SendMsgs - before.SendMsgs; got != n {
		t.Errorf("TransportStats counted %d unordered messages sent, want %d", got, n)
	}
	if after.Sends == before.Sends || after.SendDrops != before.SendDrops {
		t.Errorf("TransportStats: %d batches and %d drops, want some batches and no drops",
			after.Sends-before.Sends, after.SendDrops-before.SendDrops)
	}

	// From here one message at a time: each is sent once the sender has
	// written or dropped the one before, so the receiver's inbox never
	// fills.
	next := uint64(n + 1)
	sendOne := func() {
		t.Helper()
		s := TransportStats()
		want := s.SendMsgs + s.SendDrops + 1
		send(next)
		next++
		waitFor("the sender to write or drop a message", func() bool {
			s := TransportStats()
			return s.SendMsgs+s.SendDrops >= want
		})
	}

	// The receiver stops: once the sender noticed (a message is dropped),
	// every message is dropped, and the sender tries to connect at most
	// once per message.
	b.Stop()
	drops := TransportStats().SendDrops
	waitFor("a dropped message", func() bool {
		sendOne()
		return TransportStats().SendDrops > drops
	})
	opens, before := tr.opens.Load(), TransportStats()
	const down = 10
	for range down {
		sendOne()
	}
	if s := TransportStats(); s.SendDrops-before.SendDrops != down || s.SendMsgs != before.SendMsgs {
		t.Errorf("%d messages to a stopped host: %d dropped, %d sent", down, s.SendDrops-before.SendDrops, s.SendMsgs-before.SendMsgs)
	}
	if o := tr.opens.Load() - opens; o > down {
		t.Errorf("%d messages to a stopped host took %d connection attempts", down, o)
	}

	// Back at the same address: messages arrive again, and once one has,
	// every one.
	var ln net.Listener
	waitFor("the address to be free", func() bool {
		var err error
		ln, err = net.Listen("tcp", addrB)
		return err == nil
	})
	b, rec = startB(ln)
	defer b.Stop()
	first := next
	waitFor("a message to the restarted host", func() bool {
		sendOne()
		for i := first; i < next; i++ {
			if rec.has(i) {
				return true
			}
		}
		return false
	})
	first, before = next, TransportStats()
	for range n {
		send(next)
		next++
	}
	waitFor("the messages after the restart", func() bool {
		for i := first; i < next; i++ {
			if !rec.has(i) {
				return false
			}
		}
		return true
	})
	if s := TransportStats(); s.SendMsgs-before.SendMsgs != n || s.SendDrops != before.SendDrops {
		t.Errorf("TransportStats after the restart: %d unordered messages sent, %d dropped; want %d and none",
			s.SendMsgs-before.SendMsgs, s.SendDrops-before.SendDrops, n)
	}
}
