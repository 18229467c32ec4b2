package mc

// LMCValid runs LMC judging every combination of the local states of the
// nodes the invariants read, calling valid with the global state of each
// combination the a-posteriori check confirms.
func LMCValid(init *State, o LMCOptions, valid func(*State)) (*Result, *LMCStats) {
	o.valid = valid
	return RunLMC(init, o)
}

// LMCLocalHashes lists, per node, the node hashes of LMC's local states
// that were not pruned.
func LMCLocalHashes(init *State, o LMCOptions) []map[uint64]bool {
	e := &lmc{}
	var out []map[uint64]bool
	lmcHook = func(x *lmc) { e = x }
	RunLMC(init, o)
	lmcHook = nil
	for _, ls := range e.locals {
		m := map[uint64]bool{}
		for _, l := range ls {
			m[l.in.h] = true
		}
		out = append(out, m)
	}
	return out
}
