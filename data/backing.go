package data

import (
	"slices"
	"strconv"
	"strings"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

var _ node.Backer = (*Server)(nil)

// Backing implements node.Backer: a pending operation's o/ record holds
// the PREPARE of each of its parts, delta included, so the runtime's
// stream log need not hold it again.
func (s *Server) Backing(m node.Message) (string, int, bool) {
	p, ok := m.(msg.Prepare)
	if !ok {
		return "", 0, false
	}
	op := s.pendingOp(p.OpNum)
	if op == nil {
		return "", 0, false
	}
	for i, pt := range op.parts {
		if pt.stripe == p.Stripe && pt.prep.Same(p) {
			return opKey("o/", op.opNum), i, true
		}
	}
	return "", 0, false
}

// Backed implements node.Backer.
func (s *Server) Backed(key string, i int) (node.Message, bool) {
	n, err := strconv.ParseUint(strings.TrimPrefix(key, "o/"), 16, 64)
	if err != nil || !strings.HasPrefix(key, "o/") {
		return nil, false
	}
	op := s.pendingOp(n)
	if op == nil || i < 0 || i >= len(op.parts) {
		return nil, false
	}
	return op.parts[i].prep, true
}

// pendingOp is the pending operation numbered n, or nil.
func (s *Server) pendingOp(n uint64) *pendingOp {
	if i, found := slices.BinarySearchFunc(s.pending, n, cmpOpNum); found {
		return s.pending[i]
	}
	return nil
}
