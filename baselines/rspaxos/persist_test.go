package rspaxos_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/amalgam-store/amalgam/baselines/paxostest"
	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// TestPersistRestore checks RSPaxos's persistence with
// paxostest.CheckPersist: 12 seeds of 2 groups of 4 replicas (f=1) and 3
// clients of 15 random whole-block GETs and PUTs each; a restored
// replica must also hold the same piece, version and missing flag of
// every block.
func TestPersistRestore(t *testing.T) {
	cfg := rspaxos.Config{Layout: erasure.Layout{N: 2, G: 1, F: 1, Stripes: 4, BlockSize: 16}}
	code, err := cfg.NewCode()
	if err != nil {
		t.Fatal(err)
	}
	var st paxostest.PersistStats
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 8))
		run := paxostest.PersistRun[rspaxos.ID, *rspaxos.Replica]{Seed: seed,
			Replicas: map[node.Addr]*rspaxos.Replica{}, Clients: map[node.Addr]paxostest.Client{},
			Fresh: func(r *rspaxos.Replica) *rspaxos.Replica { return rspaxos.NewReplica(cfg, code, r.Group(), r.Member()) },
			SameApp: func(orig, restored *rspaxos.Replica) string {
				for b := range cfg.Layout.NumBlocks() {
					p0, v0, ok0 := orig.Piece(b)
					p1, v1, ok1 := restored.Piece(b)
					if !bytes.Equal(p0, p1) || v0 != v1 || ok0 != ok1 {
						return fmt.Sprintf("block %d's piece %x (version %d, held %v), was %x (%d, %v)", b, p1, v1, ok1, p0, v0, ok0)
					}
				}
				return ""
			}}
		nodes, err := rspaxos.Nodes(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for a, n := range nodes {
			run.Replicas[a] = n.(*rspaxos.Replica)
		}
		for i := range 3 {
			run.Clients[msg.ClientAddr(i)] = rspaxos.NewClient(uint64(i+1), cfg, getPut(rng.Uint64, cfg.Layout, 0, 15))
		}
		st.Add(paxostest.CheckPersist(t, run))
	}
	t.Logf("%d steps, %d restores checked; at the end %d replicas had collected slots, %d had promised a later ballot",
		st.Steps, st.Checks, st.Collected, st.Elected)
	if st.Collected == 0 || st.Elected == 0 {
		t.Fatal("the runs exercised no garbage collection or no election")
	}
}
