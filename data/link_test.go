package data

import (
	"bytes"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// refusing is a Linker that links nothing (a store that keeps the blocks
// in its log), or only the value before (a store that fails the second
// link).
type refusing struct {
	node.Disk
	before bool
}

func (d refusing) Link(dst, src string) bool {
	if d.before && strings.HasSuffix(dst, "/0") {
		return d.Disk.Link(dst, src)
	}
	return false
}

// linkKeys is the l/ records on d.
func linkKeys(d node.Disk) []string {
	var ks []string
	for k := range d {
		if strings.HasPrefix(k, node.LinkPrefix) {
			ks = append(ks, k)
		}
	}
	return ks
}

// holdsDelta reports whether op n's o/ record on d holds its first
// part's delta.
func holdsDelta(s *Server, d node.Disk, n uint64) bool {
	for _, p := range s.pending {
		if p.opNum == n {
			return bytes.Contains(d[opKey("o/", n)], p.parts[0].prep.Delta)
		}
	}
	panic("no such operation")
}

// samePending fails unless r's pending operations carry the PREPAREs of
// s's, deltas included.
func samePending(t *testing.T, s, r *Server) {
	t.Helper()
	if len(r.pending) != len(s.pending) {
		t.Fatalf("restored %d pending operations, want %d", len(r.pending), len(s.pending))
	}
	for i, p := range s.pending {
		q := r.pending[i]
		if q.opNum != p.opNum || len(q.parts) != len(p.parts) {
			t.Fatalf("restored operation %d with %d parts, want %d with %d", q.opNum, len(q.parts), p.opNum, len(p.parts))
		}
		for j := range p.parts {
			if !q.parts[j].prep.Same(p.parts[j].prep) {
				t.Fatalf("op %d part %d: restored %+v, want %+v", p.opNum, j, q.parts[j].prep, p.parts[j].prep)
			}
		}
	}
}

// twoWrites persists to w a new server, then its write of blk0 (op 1),
// then another (op 2).
func twoWrites(t *testing.T, w node.Writer) (*Server, *nodetest.Ctx) {
	s, ctx := newServer(t)
	s.TrackChanges()
	s.Persist(w)
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, pattern(1))))
	s.Persist(w)
	s.Handle(ctx, client(2), request(2, 1, write(blk0, 0, pattern(7))))
	s.Persist(w)
	return s, ctx
}

// commitFirstTwo has both parity servers of stripe 0 acknowledge ops 1
// and 2.
func commitFirstTwo(s *Server, ctx *nodetest.Ctx) {
	ctx.Take()
	for _, n := range []uint64{1, 2} {
		ack(s, ctx, parities(0)[0], n, 0)
		ack(s, ctx, parities(0)[1], n, 0)
	}
}

// Where the store links, a new operation whose block only it wrote since
// the last Persist keeps its delta in two links (the block before and
// after) instead of its o/ record, and a restored server has the same
// PREPAREs; the links go when the operation leaves pending_ops.
func TestLinkedDeltas(t *testing.T) {
	s, ctx := newServer(t)
	d := node.Disk{}
	s.TrackChanges()
	s.Persist(d)

	// Op 1: the block's first write (no value before: zeros).
	s.Handle(ctx, client(1), request(1, 1, write(blk0, 0, pattern(1))))
	s.Persist(d)
	if got := linkKeys(d); len(got) != 1 || got[0] != linkKey(1, 0, 1) {
		t.Fatalf("after a first write: links %v, want only %s", got, linkKey(1, 0, 1))
	}
	if holdsDelta(s, d, 1) {
		t.Fatal("the linked operation's o/ record holds its delta")
	}
	samePending(t, s, restored(t, d))

	// Op 2 overwrites the same block: both links, the before one naming
	// op 1's value.
	s.Handle(ctx, client(2), request(2, 1, write(blk0, 2, []byte{9, 9, 9})))
	s.Persist(d)
	if len(linkKeys(d)) != 3 {
		t.Fatalf("links %v, want op 1's after and op 2's before and after", linkKeys(d))
	}
	samePending(t, s, restored(t, d))

	// Ops 3 and 4 write the same block between two Persists: neither is
	// linked, the first's value before it was never stored.
	s.Handle(ctx, client(3), request(3, 1, write(blk1, 0, []byte{1})))
	s.Handle(ctx, client(4), request(4, 1, write(blk1, 1, []byte{2})))
	s.Persist(d)
	for _, n := range []uint64{3, 4} {
		if !holdsDelta(s, d, n) {
			t.Fatalf("op %d, one of two writes of a block in a batch, was linked", n)
		}
	}
	if len(linkKeys(d)) != 3 {
		t.Fatalf("links %v after unlinked operations", linkKeys(d))
	}
	samePending(t, s, restored(t, d))

	// Ops 1 and 2 commit and leave: their links go.
	commitFirstTwo(s, ctx)
	s.Persist(d)
	if s.PendingOps() != 2 || len(linkKeys(d)) != 0 {
		t.Fatalf("%d pending, links %v: want ops 3 and 4 and no links", s.PendingOps(), linkKeys(d))
	}
	samePending(t, s, restored(t, d))
}

// A store that links nothing gets the delta in o/; one that links only the
// value before is left with no link and the delta in o/.
func TestLinkRefused(t *testing.T) {
	for _, before := range []bool{false, true} {
		d := refusing{node.Disk{}, before}
		s, _ := twoWrites(t, d)
		if len(linkKeys(d.Disk)) != 0 || !holdsDelta(s, d.Disk, 2) {
			t.Fatalf("before=%v: links %v, or op 2's delta not in o/", before, linkKeys(d.Disk))
		}
		samePending(t, s, restored(t, d.Disk))
	}
}

// A restarted server that restored linked operations deletes their links
// when they leave.
func TestLinksDeletedAfterRestore(t *testing.T) {
	d := node.Disk{}
	_, ctx := twoWrites(t, d)
	r := restored(t, d)
	commitFirstTwo(r, ctx)
	r.Persist(d)
	if r.PendingOps() != 0 || len(linkKeys(d)) != 0 {
		t.Fatalf("%d pending, links %v after both committed", r.PendingOps(), linkKeys(d))
	}
}
