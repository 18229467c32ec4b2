package mc

import (
	"fmt"

	"github.com/amalgam-store/amalgam/node"
)

// LagOn lets the nodes at addrs run ahead of their disks, as a host with a
// pipelined store runs a node's next batches while the earlier ones wait
// for their fsync: after each handler of such a node its new state is not
// yet durable, the unordered messages it names with node.EarlySender's
// SendsEarly leave at once and its other unordered messages are held; a
// Sync event makes the node's state durable and lets the held messages
// leave (one Sync covers every handler since the last, as a group commit
// does). A crash loses what was not durable: the node restarts from its
// state at the last Sync (Restartable) and its held messages are lost.
// Timers are set at once: they are the node's own, and a crash clears
// them. Such a node may not stream. Set it on the initial state, with
// Restartable.
func (s *State) LagOn(addrs ...node.Addr) {
	s.sys.lag = make([]bool, len(s.sys.addrs))
	for _, a := range addrs {
		if i, ok := s.sys.index[a]; ok {
			s.sys.lag[i] = true
		}
	}
}

func (sys *system) lags(i int) bool { return i < len(sys.lag) && sys.lag[i] }

// ahead is the instance of lagging node i after a handler's effect ef,
// whose disk stays where it was, and the messages that leave at once.
func (s *State) ahead(i int, ef *effect) (*instance, []Envelope, error) {
	if len(ef.streams) > 0 {
		return nil, nil, fmt.Errorf("mc: %s streams while it runs ahead of its disk (LagOn)", s.sys.addrs[i])
	}
	old := s.nodes[i]
	if old.disk == nil && ef.inst.h == old.h {
		return ef.inst, ef.sends, nil // nothing to write: released at once
	}
	in := &instance{nd: ef.inst.nd, h: ef.inst.h, disk: old.disk, held: old.held}
	if in.disk == nil {
		in.disk = &instance{nd: old.nd, h: old.h}
	}
	es, _ := ef.inst.nd.(node.EarlySender)
	var out []Envelope
	for _, e := range ef.sends {
		if es != nil && es.SendsEarly(e.Msg) {
			out = append(out, e)
		} else {
			in.held = append(in.held[:len(in.held):len(in.held)], e)
		}
	}
	return in, out, nil
}

// Durable is the node at a as its disk holds it: the state at its last
// Sync for a node running ahead of its disk (LagOn), else the node
// (Node). Callers must only read it.
func (s *State) Durable(a node.Addr) node.Node {
	if i, ok := s.sys.index[a]; ok && s.nodes[i].disk != nil {
		return s.nodes[i].disk.nd
	}
	return s.Node(a)
}
