// Package paxostest holds test helpers the baselines
// (baselines/shardedpaxos, baselines/rspaxos) share.
package paxostest

import (
	"slices"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
)

// GroupsOf lists, in order, the groups (shards) the scripts touch.
func GroupsOf(l erasure.Layout, scripts [][][]msg.Op) []int {
	var gs []int
	for _, sc := range scripts {
		for _, txn := range sc {
			for _, op := range txn {
				if g := l.Shard(op.Block); !slices.Contains(gs, g) {
					gs = append(gs, g)
				}
			}
		}
	}
	slices.Sort(gs)
	return gs
}
