package mc

import "fmt"

// LMCValid runs LMC judging every combination of the local states of the
// nodes the invariants read, calling valid with the global state of each
// combination the a-posteriori check confirms.
func LMCValid(init *State, o LMCOptions, valid func(*State)) (*Result, *LMCStats) {
	o.valid = valid
	return RunLMC(init, o)
}

// LMCWitnesses runs LMC and replays, with State.Apply from init, every
// execution it kept to a local state; it returns how many it replayed
// and the first that does not end with the node in that local state.
func LMCWitnesses(init *State, o LMCOptions) (n int, bad string) {
	e := &lmc{}
	lmcHook = func(x *lmc) { e = x }
	RunLMC(init, o)
	lmcHook = nil
	for _, ls := range e.locals {
		for _, l := range ls {
			for _, w := range l.wits {
				n++
				s, err, ok := e.replay(events(w, 0))
				if bad == "" && (!ok || err != nil || s.nodes[l.i].h != l.in.h || s.crashed[l.i] != l.crashed) {
					bad = fmt.Sprintf("node %d: an execution of %d events does not reach its local state (%v %v)", l.i, len(w), ok, err)
				}
			}
		}
	}
	return n, bad
}
