package data

import (
	"testing"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// Every PREPARE a request streams is backed by its pending operation's
// record: a server restored from what Persist wrote gives the same message
// back under the key and index Backing named; other messages, and a
// PREPARE whose operation left pending_ops, are not backed.
func TestBackingPrepares(t *testing.T) {
	s, ctx := newServer(t)
	d := node.Disk{}
	s.TrackChanges()
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 4, []byte{0xde, 0xad}), write(blk1, 0, []byte{7})))
	s.Persist(d)
	type ref struct {
		key string
		i   int
	}
	refs := map[ref]msg.Prepare{}
	for _, e := range ctx.Take() {
		p, ok := e.Msg.(msg.Prepare)
		if e.Kind != nodetest.Stream || !ok {
			continue
		}
		k, i, ok := s.Backing(p)
		if !ok {
			t.Fatalf("PREPARE to %s not backed", e.To)
		}
		refs[ref{k, i}] = p
	}
	if len(refs) != 2 {
		t.Fatalf("%d distinct backed PREPAREs, want one per stripe (2)", len(refs))
	}
	r := restored(t, d)
	for k, p := range refs {
		m, ok := r.Backed(k.key, k.i)
		if q, isPrep := m.(msg.Prepare); !ok || !isPrep || !q.Same(p) {
			t.Fatalf("restored %q #%d: %v, %v; want %v", k.key, k.i, m, ok, p)
		}
	}
	if _, _, ok := s.Backing(msg.Commit{OpNum: 1}); ok {
		t.Fatal("a COMMIT is backed")
	}
	var any msg.Prepare
	for _, p := range refs {
		any = p
	}
	other := any
	other.Delta = append([]byte(nil), any.Delta...)
	other.Delta[0] ^= 0xff
	if _, _, ok := s.Backing(other); ok {
		t.Fatal("a PREPARE with another delta is backed")
	}
	s.pending = nil
	if _, _, ok := s.Backing(any); ok {
		t.Fatal("a PREPARE of an operation no longer pending is backed")
	}
	if _, ok := s.Backed("o/zz", 0); ok {
		t.Fatal("a bad key is backed")
	}
}
