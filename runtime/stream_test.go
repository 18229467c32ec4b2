package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// counter streams Commit{OpNum: 1, 2, ..., total} to each of to, burst
// at a time on a timer: one message to all of them in a row, which share
// its stream log record. It persists how far it got.
type counter struct {
	to          []node.Addr
	next, total uint64
	burst       int
}

type tick struct{}

func (tick) Hash(h *node.Hasher) { h.Uint64(1) }

func (c *counter) Init(ctx node.Context)                        { ctx.SetTimer(tick{}, time.Millisecond, 2*time.Millisecond) }
func (c *counter) Handle(node.Context, node.Addr, node.Message) {}
func (c *counter) Timer(ctx node.Context, _ node.Timer) {
	for i := 0; i < c.burst && c.next <= c.total; i++ {
		for _, to := range c.to {
			ctx.Stream(to, msg.Commit{OpNum: c.next})
		}
		c.next++
	}
	if c.next <= c.total {
		ctx.SetTimer(tick{}, time.Millisecond, 2*time.Millisecond)
	}
}
func (c *counter) Clone() node.Node            { cp := *c; return &cp }
func (c *counter) Hash() uint64                { return c.next }
func (c *counter) TrackChanges()               {}
func (c *counter) Persist(w node.Writer)       { putUint64(w, "next", c.next) }
func (c *counter) Restore(r node.Reader) error { return getUint64(r, "next", &c.next) }

// putUint64 and getUint64 store the one number a test node persists.
func putUint64(w node.Writer, k string, v uint64) { w.Put(k, binary.BigEndian.AppendUint64(nil, v)) }

func getUint64(r node.Reader, k string, v *uint64) error {
	b, ok, err := r.Get(k)
	if ok {
		*v = binary.BigEndian.Uint64(b)
	}
	return err
}

// sink checks that it receives 1, 2, 3, ... exactly once each, in order.
type sink struct {
	last uint64
	bad  []string
}

func (s *sink) Init(node.Context) {}
func (s *sink) Handle(_ node.Context, from node.Addr, m node.Message) {
	n := m.(msg.Commit).OpNum
	if n != s.last+1 && len(s.bad) < 10 {
		s.bad = append(s.bad, fmt.Sprintf("got %d after %d from %s", n, s.last, from))
	}
	s.last = max(s.last, n)
}
func (s *sink) Timer(node.Context, node.Timer) {}
func (s *sink) Clone() node.Node               { cp := *s; return &cp }
func (s *sink) Hash() uint64                   { return s.last }
func (s *sink) TrackChanges()                  {}
func (s *sink) Persist(w node.Writer)          { putUint64(w, "last", s.last) }
func (s *sink) Restore(r node.Reader) error    { return getUint64(r, "last", &s.last) }

// TestStreamExactlyOnce streams numbered messages between two hosts whose
// connections a proxy resets at random, and (durable) restarts both hosts
// from their stores several times while the messages flow. The receiver
// must see every number once, in order. The sender streams each message
// to two receivers on that host.
func TestStreamExactlyOnce(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			total := uint64(20000)
			if testing.Short() {
				total = 4000
			}
			lnA, _ := net.Listen("tcp", "127.0.0.1:0")
			lnB, _ := net.Listen("tcp", "127.0.0.1:0")
			pa := newResetProxy(t, lnA.Addr().String(), 5*time.Millisecond, 40*time.Millisecond)
			pb := newResetProxy(t, lnB.Addr().String(), 5*time.Millisecond, 40*time.Millisecond)
			defer pa.close()
			defer pb.close()
			addrA, addrB := lnA.Addr().String(), lnB.Addr().String()
			resolve := func(a node.Addr) (string, bool) {
				switch a {
				case "data/0":
					return pa.ln.Addr().String(), true
				case "parity/1", "parity/2":
					return pb.ln.Addr().String(), true
				}
				return "", false
			}
			dirA, dirB := t.TempDir(), t.TempDir()
			met := &countMetrics{}
			var storeA, storeB *Store
			start := func(ln net.Listener, dir string, st **Store, nodes map[node.Addr]node.Node) *Host {
				if durable {
					s, err := OpenStore(dir, true)
					if err != nil {
						t.Fatal(err)
					}
					*st = s
				}
				h := NewHost(Options{Listener: ln, Resolve: resolve, BlockSize: 64, Store: *st, Metrics: met})
				for a, n := range nodes {
					if err := h.AddNode(a, n); err != nil {
						t.Fatal(err)
					}
				}
				h.Start()
				return h
			}
			stop := func(h *Host, st *Store) {
				h.Stop()
				if st != nil {
					_ = st.Close()
				}
			}
			listen := func(addr string) net.Listener {
				for i := 0; ; i++ {
					ln, err := net.Listen("tcp", addr)
					if err == nil {
						return ln
					}
					if i > 100 {
						t.Fatal(err)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			sender := func() map[node.Addr]node.Node {
				return map[node.Addr]node.Node{"data/0": &counter{to: []node.Addr{"parity/1", "parity/2"}, next: 1, total: total, burst: 50}}
			}
			sinks := func() map[node.Addr]node.Node {
				return map[node.Addr]node.Node{"parity/1": &sink{}, "parity/2": &sink{}}
			}
			ha := start(lnA, dirA, &storeA, sender())
			hb := start(lnB, dirB, &storeB, sinks())
			restarts := 0
			deadline := time.Now().Add(safetyStop)
			for {
				last := total
				var bad []string
				for _, a := range []node.Addr{"parity/1", "parity/2"} {
					ctx, cancel := context.WithTimeout(context.Background(), safetyStop)
					err := hb.Inspect(ctx, a, func(n node.Node) { s := n.(*sink); last, bad = min(last, s.last), append(bad, s.bad...) })
					cancel()
					if err != nil {
						t.Fatal(err)
					}
				}
				if len(bad) > 0 {
					t.Fatalf("stream broke FIFO/exactly-once: %v", bad)
				}
				if last == total {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("receiver got %d of %d messages", last, total)
				}
				time.Sleep(10 * time.Millisecond)
				if durable && restarts < 6 && last > uint64(restarts+1)*total/8 {
					// Restart one side from its store, alternately.
					restarts++
					if restarts%2 == 1 {
						stop(hb, storeB)
						hb = start(listen(addrB), dirB, &storeB, sinks())
					} else {
						stop(ha, storeA)
						ha = start(listen(addrA), dirA, &storeA, sender())
					}
				}
			}
			if durable {
				// Once every message is acknowledged, the sender's next
				// batch deletes its last stream log records.
				l := ha.loop("data/0")
				for held := 1; held > 0; time.Sleep(10 * time.Millisecond) {
					l.log.mu.Lock()
					held = len(l.log.refs)
					l.log.mu.Unlock()
					if time.Now().After(deadline) {
						t.Fatalf("%d stream log records still held", held)
					}
				}
				if err := ha.Inspect(context.Background(), "data/0", func(node.Node) {}); err != nil {
					t.Fatal(err)
				}
			}
			stop(ha, storeA)
			stop(hb, storeB)
			if durable {
				st, err := OpenStore(dirA, true)
				if err != nil {
					t.Fatal(err)
				}
				left := 0
				_ = st.scan(bodyPrefix("data/0"), func([]byte, []byte) error { left++; return nil })
				_ = st.Close()
				if left > 0 {
					t.Fatalf("%d stream log records left after every message was acknowledged", left)
				}
			}
			t.Logf("%d messages, %d resets, %d stream reconnects, %d restarts", total, pa.resets.Load()+pb.resets.Load(), met.reconnects.Load(), restarts)
			if met.reconnects.Load() == 0 {
				t.Fatal("no stream reconnected: the test exercised nothing")
			}
			if durable && restarts == 0 {
				t.Fatal("no restart happened")
			}
		})
	}
}
