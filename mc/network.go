package mc

import "slices"

// KeepDelivered makes the unordered network the set of messages ever
// sent, in s and every state built from it: delivering a message leaves
// it in flight (so it can be delivered again), and sending a message
// already in flight adds nothing. This is TLA+'s and Stateright's 2PC
// rule (their msgs is a set that only grows). Duplicate events are then
// never offered (a Deliver already keeps the message); Drop still loses
// one. Set it on the initial state, before any search.
func (s *State) KeepDelivered() {
	s.sys.keep = true
	seen := map[uint64]bool{}
	s.net = slices.DeleteFunc(slices.Clone(s.net), func(e Envelope) bool {
		if seen[e.hash] {
			s.netSum -= mix(e.hash)
			return true
		}
		seen[e.hash] = true
		return false
	})
	s.fp = s.fingerprint()
}

// inFlight reports whether a message hashing h is in the network.
func (s *State) inFlight(h uint64) bool {
	return slices.ContainsFunc(s.net, func(x Envelope) bool { return x.hash == h })
}
