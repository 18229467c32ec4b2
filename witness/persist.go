package witness

import (
	"fmt"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
)

// Durable state of a witness (node.Persistent): its held PREPAREs, as a
// parity server stores them, and the hash of its configuration under
// "meta".

type witnessMeta struct{ CfgHash uint64 }

var _ node.Persistent = (*Server)(nil)

// TrackChanges implements node.Persistent.
func (s *Server) TrackChanges() { s.prepares.Track() }

// Persist implements node.Persistent.
func (s *Server) Persist(w node.Writer) {
	parity.PersistPrepares(&s.prepares, w)
	w.Put("meta", parity.GobBytes(witnessMeta{CfgHash: s.cfgHash}))
}

// Restore implements node.Persistent.
func (s *Server) Restore(r node.Reader) error {
	v, ok, err := r.Get("meta")
	if err != nil || !ok {
		return err
	}
	var m witnessMeta
	if err := parity.GobDecode(v, &m); err != nil {
		return fmt.Errorf("witness/%d: meta: %w", s.me, err)
	}
	if m.CfgHash != s.cfgHash {
		return fmt.Errorf("witness/%d: stored state is for another configuration", s.me)
	}
	if err := parity.RestorePrepares(&s.prepares, r); err != nil {
		return fmt.Errorf("witness/%d: %w", s.me, err)
	}
	return nil
}
