package check

import (
	"fmt"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/msg"
)

// Recorder is mc.Recorder for Amalgam's simulations: it builds the
// clients' history step by step and watches PREPAREs to catch a request
// executed twice.
type Recorder struct {
	*mc.Recorder
	execs map[execKey]uint64 // (shard, primary, client, seq) -> op number it executed as
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
func NewRecorder(s *mc.State) *Recorder {
	r := &Recorder{Recorder: mc.NewRecorder(s), execs: map[execKey]uint64{}}
	s.Observe(r.wire)
	return r
}

func (r *Recorder) wire(e mc.Envelope, _ bool) {
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

// Step records the replies that step st delivered (see mc.Recorder.Step)
// and returns the first at-most-once violation seen on the wire.
func (r *Recorder) Step(st mc.Step) error {
	r.Recorder.Step(st)
	return r.err
}
