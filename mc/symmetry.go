package mc

import (
	"slices"

	"github.com/amalgam-store/amalgam/node"
)

// Permutable is a node, message or timer that holds node addresses (or
// identities derived from them): PermutedHash is the Hash its value would
// have with every address a renamed to p(a). Values of a symmetric system
// that hold no address need not implement it.
type Permutable interface {
	PermutedHash(p func(node.Addr) node.Addr) uint64
}

// symmetry is what Symmetric declared.
type symmetry struct {
	groups [][]int // node indices, in address order
	key    func(node.Node) uint64
}

// Symmetric declares groups of interchangeable nodes, in s and every state
// built from it: renaming the nodes of a group among themselves (in every
// node, message, timer and stream, through Permutable) maps reachable
// states to reachable states and keeps every invariant's verdict. With
// Options.Symmetry a search keys its visited set by the fingerprint of a
// representative: each group's nodes sorted by key (ties keep address
// order), Stateright's representative. States with the same
// representative are one state to the search. Set it on the initial state.
func (s *State) Symmetric(groups [][]node.Addr, key func(node.Node) uint64) {
	sym := &symmetry{key: key}
	for _, g := range groups {
		var ix []int
		for _, a := range g {
			ix = append(ix, s.sys.index[a])
		}
		slices.Sort(ix)
		sym.groups = append(sym.groups, ix)
	}
	s.sys.sym = sym
}

// symFingerprint is the fingerprint of s's representative (Symmetric).
func (s *State) symFingerprint() uint64 {
	sym := s.sys.sym
	perm := make([]int, len(s.nodes)) // old index -> new index
	for i := range perm {
		perm[i] = i
	}
	for _, g := range sym.groups {
		order := slices.Clone(g)
		slices.SortStableFunc(order, func(a, b int) int {
			ka, kb := sym.key(s.nodes[a].nd), sym.key(s.nodes[b].nd)
			switch {
			case ka < kb:
				return -1
			case ka > kb:
				return 1
			}
			return 0
		})
		for k, i := range order {
			perm[i] = g[k]
		}
	}
	p := func(a node.Addr) node.Addr {
		if i, ok := s.sys.index[a]; ok {
			return s.sys.addrs[perm[i]]
		}
		return a
	}
	hashOf := func(v interface{ Hash(*node.Hasher) }) uint64 {
		if pv, ok := v.(Permutable); ok {
			return pv.PermutedHash(p)
		}
		return node.HashOf(v)
	}
	envHash := func(e Envelope) uint64 {
		h := node.NewHasher()
		h.String(string(p(e.From)))
		h.String(string(p(e.To)))
		h.Uint64(hashOf(e.Msg))
		return h.Sum()
	}
	var nodeSum, netSum, streamSum, retHash uint64
	for i, in := range s.nodes {
		nh := in.h
		if pv, ok := in.nd.(Permutable); ok {
			nh = pv.PermutedHash(p)
		}
		h := mix(kNode*uint64(perm[i]+1) ^ nh)
		if s.crashed[i] {
			h = mix(h ^ kCrashed)
		}
		for _, t := range s.timers[i] {
			h = mix(h ^ hashOf(t.T))
			h = mix(h ^ kTimer ^ uint64(t.Min))
			h = mix(h ^ uint64(t.Max))
		}
		nodeSum += h
	}
	for _, e := range s.net {
		netSum += mix(envHash(e))
	}
	for _, q := range s.streams {
		h := linkHash(int32(perm[q.msgs[0].from-1]+1), int32(perm[q.msgs[0].to-1]+1))
		for _, e := range q.msgs {
			h = mix(h ^ envHash(e))
		}
		streamSum += mix(h + uint64(len(q.msgs)))
	}
	for _, c := range s.returns {
		retHash = returnHash(retHash, uint8(slices.Index(s.sys.clients, perm[s.sys.clients[c]])))
	}
	r := *s
	r.nodeSum, r.netSum, r.streamSum, r.retHash = nodeSum, netSum, streamSum, retHash
	if s.cut != 0 {
		r.cut = int32(perm[s.cut-1] + 1)
	}
	return r.fingerprint()
}
