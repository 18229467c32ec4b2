package mc

import (
	"slices"

	"github.com/amalgam-store/amalgam/node"
)

// InFlight is a message on an ordered stream at a cut of a running
// system: numbered by its sender, not yet handled by its receiver.
type InFlight struct {
	From, To node.Addr
	Msg      node.Message
}

// NewStateAt builds a state from a cut of a running system (online
// checking): the nodes as restored from the cut, each Init'ed in address
// order as after a restart, and the streams' in-flight messages, queued,
// per stream in the order given, before anything Init streams. Unordered
// messages in flight at the cut are not in the state (lost). clientOf is
// as for NewStateClients.
func NewStateAt(nodes map[node.Addr]node.Node, clientOf func(node.Node) (Client, bool), inflight []InFlight) *State {
	s := NewStateClients(nodes, clientOf)
	byLink := map[link][]Envelope{}
	var order []link
	for _, m := range inflight {
		to, ok := s.sys.index[m.To]
		from, ok2 := s.sys.index[m.From]
		if !ok || !ok2 {
			continue // not a node of the run
		}
		e := newEnvelope(m.From, m.To, m.Msg)
		e.from, e.to = int32(from+1), int32(to+1)
		l := link{m.From, m.To}
		if _, seen := byLink[l]; !seen {
			order = append(order, l)
		}
		byLink[l] = append(byLink[l], e)
	}
	s.streams = slices.Clone(s.streams)
	for _, l := range order {
		es := byLink[l]
		if i, ok := s.findStream(l); ok {
			s.streams[i].msgs = append(es, s.streams[i].msgs...)
		} else {
			s.streams = slices.Insert(s.streams, i, stream{link: l, lh: linkHash(es[0].from, es[0].to), msgs: es})
		}
	}
	s.nodeSum, s.netSum, s.streamSum, s.retHash = s.sums()
	s.fp = s.fingerprint()
	return s
}
