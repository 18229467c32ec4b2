package reconfig

import (
	"cmp"
	"slices"

	"github.com/amalgam-store/amalgam/msg"
)

// Chain computes what survives a data server replacement (thesis
// 3.3.2.1 step 2, 3.3.4) from the answers of the shard's backups: tau is
// the highest op number any parity server applied; every operation up to
// tau is kept (it committed), then the contiguous run tau+1, tau+2, ... of
// operations whose every stripe's PREPARE was recovered. Anything after the
// first gap, or with a stripe missing, is dropped: it cannot have
// committed. Install.Upto is the last kept op number.
//
// Decision (the thesis says parity servers apply "all operations up to the
// largest in P"): a parity server outside the quorum may hold an operation
// at or below tau that no answer carried (the others applied and dropped
// it), so parity servers apply everything up to max(tau, end of chain),
// their own PREPAREs included. The model checker found the difference. Client records merge the servers' records with the kept
// operations' replies, keeping each client's highest request.
func Chain(shard int, answers []msg.StopShardOK) msg.Install {
	var tau uint64
	byOp := map[uint64]map[int]msg.Prepare{}
	records := map[uint64]msg.ClientRecord{}
	note := func(r msg.ClientRecord) {
		if old, ok := records[r.Client]; !ok || r.Seq > old.Seq {
			records[r.Client] = r
		}
	}
	for _, a := range answers {
		tau = max(tau, a.OpNum)
		for _, p := range a.Prepares {
			if p.Shard != shard {
				continue
			}
			if byOp[p.OpNum] == nil {
				byOp[p.OpNum] = map[int]msg.Prepare{}
			}
			byOp[p.OpNum][p.Stripe] = p
		}
		for _, r := range a.Clients {
			note(r)
		}
	}
	complete := func(n uint64) bool {
		parts, ok := byOp[n]
		if !ok {
			return false
		}
		for _, p := range parts {
			for _, st := range p.Stripes {
				if _, ok := parts[st]; !ok {
					return false
				}
			}
			break
		}
		return true
	}
	keep := map[uint64]bool{}
	for n := range byOp {
		if n <= tau || Mutant == "chain-keeps-gaps" {
			keep[n] = true
		}
	}
	upto := tau
	for n := tau + 1; complete(n); n++ {
		keep[n] = true
		upto = n
	}
	inst := msg.Install{Shard: shard, Upto: upto}
	for n := range keep {
		for _, p := range byOp[n] {
			inst.Chain = append(inst.Chain, p)
			if p.Reply != nil {
				note(msg.ClientRecord{Client: p.Client, Seq: p.Seq, Reply: *p.Reply})
			}
		}
	}
	slices.SortFunc(inst.Chain, func(a, b msg.Prepare) int {
		switch {
		case a.Key().Less(b.Key()):
			return -1
		case b.Key().Less(a.Key()):
			return 1
		}
		return 0
	})
	for _, r := range records {
		inst.Clients = append(inst.Clients, r)
	}
	slices.SortFunc(inst.Clients, func(a, b msg.ClientRecord) int { return cmp.Compare(a.Client, b.Client) })
	return inst
}
