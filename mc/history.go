package mc

import (
	"fmt"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/workload"
	"github.com/anishathalye/porcupine"
)

// Recorder turns a run's steps into the clients' history for porcupine,
// and watches PREPAREs to catch a request executed twice. Step n's events
// happen at time 2n+1; a client's next request is invoked at 2n+2.
type Recorder struct {
	steps int // steps recorded, across runs
	ops   []porcupine.Operation
	calls map[node.Addr]int64 // invocation time of each client's request in flight
	execs map[execKey]uint64  // (shard, client, seq) -> op number it executed as
	err   error
}

// execKey names one request at one data server incarnation. A request
// may run again at a replacement: the old run either committed, and the
// replacement knows its result, or it did not and is discarded
// (linearizability catches a wrong re-run).
type execKey struct {
	shard       int
	primary     uint64
	client, seq uint64
}

// NewRecorder starts recording from the initial state s and installs its
// wire observer on s.
func NewRecorder(s *State) *Recorder {
	r := &Recorder{calls: map[node.Addr]int64{}, execs: map[execKey]uint64{}}
	for _, a := range s.Addrs() {
		if _, ok := s.Node(a).(*workload.Client); ok {
			r.calls[a] = 0
		}
	}
	s.Observe(r.wire)
	return r
}

func (r *Recorder) wire(e Envelope, _ bool) {
	p, ok := e.Msg.(msg.Prepare)
	if !ok || r.err != nil {
		return
	}
	k := execKey{p.Shard, p.Primary, p.Client, p.Seq}
	if n, seen := r.execs[k]; seen && n != p.OpNum {
		r.err = fmt.Errorf("at-most-once: client %d request %d executed twice on shard %d (op %d and op %d)",
			p.Client, p.Seq, p.Shard, n, p.OpNum)
		return
	}
	r.execs[k] = p.OpNum
}

// Step records the replies that step st delivered. It must see every
// step, in order (times count the calls, not st.N, so that one Recorder
// can follow several runs that continue each other). It returns the first
// at-most-once violation seen on the wire.
func (r *Recorder) Step(st Step) error {
	n := r.steps
	r.steps++
	a := st.Event.Env.To
	if st.Event.Kind == Fire {
		a = st.Event.Node
	}
	before, ok := st.Before.Node(a).(*workload.Client)
	if ok {
		after := st.After.Node(a).(*workload.Client)
		for i := len(before.Replies()); i < len(after.Replies()); i++ {
			t := int64(2*n + 1)
			r.ops = append(r.ops, porcupine.Operation{
				ClientId: int(after.ID() - 1), Input: after.Script()[i], Call: r.calls[a],
				Output: after.Replies()[i], Return: t})
			r.calls[a] = t + 1
		}
	}
	return r.err
}

// History is the completed operations recorded so far.
func (r *Recorder) History() []porcupine.Operation { return r.ops }
