package data

import (
	"slices"

	"github.com/amalgam-store/amalgam/node"
)

// Read-only views of the server's state for tests, the checker and status.

// Block returns the current contents of a block of this shard, including
// the effect of operations not yet committed. Callers must not modify it.
func (s *Server) Block(b uint64) []byte { return s.blocks.Get(b) }

// Machine is the machine (and shard) this server runs on.
func (s *Server) Machine() int { return s.me }

// NextOpNum is op_num: the number the next operation will get.
func (s *Server) NextOpNum() uint64 { return s.opNum }

// PendingOps is the number of operations in pending_ops.
func (s *Server) PendingOps() int { return len(s.pending) }

// PendingOn reports whether an operation in pending_ops touches stripe st.
func (s *Server) PendingOn(st int) bool {
	for _, p := range s.pending {
		for _, pt := range p.parts {
			if pt.stripe == st {
				return true
			}
		}
	}
	return false
}

// Primary is this server's primary_num: its incarnation.
func (s *Server) Primary() uint64 { return s.primary() }

// Incarnation implements node.Incarnated.
func (s *Server) Incarnation() uint64 { return s.rc.inc }

// ConfigNum is the number of the configuration this server is in.
func (s *Server) ConfigNum() uint64 { return s.cfg.Num }

// PeerVersion implements node.Peered: the server addresses its peers at
// the incarnations of its configuration.
func (s *Server) PeerVersion() uint64 { return s.cfg.Num }

// PeerIncarnations implements node.Peered.
func (s *Server) PeerIncarnations(fn func(node.Addr, uint64)) { s.cfg.Incarnations(fn) }

// Fenced lists the backups this server has fenced (StopBackup: their
// acknowledgements no longer count) for a replacement in progress, until
// the next configuration. Operations on their stripes wait meanwhile.
func (s *Server) Fenced() []node.Addr { return slices.Clone(s.rc.stopped) }

// Replacing reports whether backup a is being replaced as far as this
// server knows: fenced (its acknowledgements no longer count) or a new
// incarnation that has not acknowledged every pending operation yet.
func (s *Server) Replacing(a node.Addr) bool {
	return s.isStopped(a) || slices.Contains(s.rc.resend, a)
}
