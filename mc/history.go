package mc

import (
	"fmt"
	"math"
	"strings"

	"github.com/amalgam-store/amalgam/node"
	"github.com/anishathalye/porcupine"
)

// Client is the checker's view of a closed-loop client node: it invokes
// its operations one at a time, the first at Init and each next one when
// the previous one returns. The run's history is built from the clients'
// operations and the order in which they returned (the state's Returns).
type Client interface {
	// Returned is how many of the client's operations have returned.
	Returned() int
	// Operation is the client's i-th operation: its input and, once it
	// has returned (i < Returned()), its output. ok is false when the
	// client has no i-th operation: it is done.
	Operation(i int) (input, output any, ok bool)
}

// ClientAt returns the client view of the node at a, if it is a client.
func (s *State) ClientAt(a node.Addr) (Client, bool) {
	i := s.Index(a)
	if i < 0 {
		return nil, false
	}
	return s.sys.clientOf(s.nodes[i].nd)
}

// Clients lists the clients' addresses in order.
func (s *State) Clients() []node.Addr {
	out := make([]node.Addr, len(s.sys.clients))
	for k, i := range s.sys.clients {
		out[k] = s.sys.addrs[i]
	}
	return out
}

func (s *State) client(k int) Client {
	c, _ := s.sys.clientOf(s.nodes[s.sys.clients[k]].nd)
	return c
}

// ClientsDone reports whether every client has completed all its
// operations.
func ClientsDone(s *State) bool {
	for k := range s.sys.clients {
		c := s.client(k)
		if _, _, more := c.Operation(c.Returned()); more {
			return false
		}
	}
	return true
}

// ClientsDonePred holds when every client has completed all its
// operations.
func ClientsDonePred() Predicate {
	return Pred("all clients done", func(s *State) (bool, string) {
		for k, i := range s.sys.clients {
			c := s.client(k)
			if _, _, more := c.Operation(c.Returned()); more {
				return false, fmt.Sprintf("%s has %d operations done and more to run", s.sys.addrs[i], c.Returned())
			}
		}
		return true, "every client has all its replies"
	})
}

// RepliesAtLeast holds once the clients have completed n operations in all.
func RepliesAtLeast(n int) Predicate {
	return Pred(fmt.Sprintf("%d replies received", n), func(s *State) (bool, string) {
		return len(s.returns) >= n, fmt.Sprintf("%d replies", len(s.returns))
	})
}

// History rebuilds the clients' history from s for porcupine: completed
// operations with call and return times from the return order (step i's
// return is at time 2i+2, the client's next call one later), then each
// client's current operation as pending (Output nil, Return MaxInt64).
// ClientId is the client's position in Clients.
func History(s *State) []porcupine.Operation {
	var hist []porcupine.Operation
	n := make([]int, len(s.sys.clients))
	call := make([]int64, len(s.sys.clients))
	for i, k := range s.returns {
		in, out, _ := s.client(int(k)).Operation(n[k])
		t := int64(2*i + 2)
		hist = append(hist, porcupine.Operation{ClientId: int(k), Input: in, Call: call[k], Output: out, Return: t})
		n[k]++
		call[k] = t + 1
	}
	for k := range s.sys.clients {
		if in, _, ok := s.client(k).Operation(n[k]); ok {
			hist = append(hist, porcupine.Operation{ClientId: k, Input: in, Call: call[k], Return: math.MaxInt64})
		}
	}
	return hist
}

// DescribeHistory renders a history, one operation a line, with the
// model's DescribeOperation if it has one. clients names the ClientIds.
func DescribeHistory(model porcupine.Model, clients []node.Addr, hist []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range hist {
		var what string
		switch {
		case model.DescribeOperation != nil:
			what = model.DescribeOperation(op.Input, op.Output)
		case op.Output == nil:
			what = Describe(op.Input) + " -> pending"
		default:
			what = Describe(op.Input) + " -> " + Describe(op.Output)
		}
		ret := fmt.Sprint(op.Return)
		if op.Return == math.MaxInt64 {
			ret = "-"
		}
		who := fmt.Sprintf("client %d", op.ClientId)
		if op.ClientId >= 0 && op.ClientId < len(clients) {
			who = string(clients[op.ClientId])
		}
		fmt.Fprintf(&b, "\n  %s [%d..%s] %s", who, op.Call, ret, what)
	}
	return b.String()
}

// Linearizable checks the clients' history (History) with porcupine
// against model, the system's sequential specification: its Step must
// accept a nil output, a pending operation that may take effect at any
// point after its call with any result, or none. Results are cached by
// the clients' states and the return order.
func Linearizable(model porcupine.Model) Predicate {
	cache := NewCache[uint64, struct{}](PredEntries) // passes only: no pointers to scan
	return Pred("results linearizable", func(s *State) (bool, string) {
		k := s.ClientsKey()
		if _, ok := cache.Get(k, mix(k)); ok {
			return true, "the clients' history is linearizable"
		}
		hist := History(s)
		if !porcupine.CheckOperations(model, hist) {
			return false, fmt.Sprintf("history of %d operations is not linearizable:%s", len(hist),
				DescribeHistory(model, s.Clients(), hist))
		}
		cache.Put(k, mix(k), struct{}{})
		return true, "the clients' history is linearizable"
	}).Projected(clientsGlobal)
}

// Recorder builds the clients' history of a simulation step by step, for
// runs too long to rebuild it from each state. Step n's events happen at
// time 2n+1; a client's next operation is invoked at 2n+2.
type Recorder struct {
	steps int // steps recorded, across runs
	ops   []porcupine.Operation
	calls map[node.Addr]int64 // invocation time of each client's operation in flight
	ids   map[node.Addr]int
}

// NewRecorder starts recording from the initial state s.
func NewRecorder(s *State) *Recorder {
	r := &Recorder{calls: map[node.Addr]int64{}, ids: map[node.Addr]int{}}
	for k, a := range s.Clients() {
		r.calls[a], r.ids[a] = 0, k
	}
	return r
}

// Step records the operations that step st completed. It must see every
// step, in order (times count the calls, not st.N, so that one Recorder
// can follow several runs that continue each other).
func (r *Recorder) Step(st Step) {
	n := r.steps
	r.steps++
	a := st.Event.Target()
	before, ok := st.Before.ClientAt(a)
	if !ok {
		return
	}
	after, _ := st.After.ClientAt(a)
	for i := before.Returned(); i < after.Returned(); i++ {
		in, out, _ := after.Operation(i)
		t := int64(2*n + 1)
		r.ops = append(r.ops, porcupine.Operation{ClientId: r.ids[a], Input: in, Call: r.calls[a], Output: out, Return: t})
		r.calls[a] = t + 1
	}
}

// History is the completed operations recorded so far.
func (r *Recorder) History() []porcupine.Operation { return r.ops }
