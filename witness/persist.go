package witness

import (
	"fmt"

	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Durable state of a witness (node.Persistent), under the keys
//
//	meta                          configuration hash (node.Enc)
//	cfg                           gob of the configuration the witness is in
//	rc                            gob of witnessRC: incarnation, fences, early stream messages
//	p/<shard>/<op_num>/<stripe>   held PREPAREs (backup.PersistPrepares)
//
// PREPAREs are written when they change, cfg and rc when their hash
// changes, meta on every Persist.

type witnessRC struct {
	Inc     uint64
	Stopped []bool
	Early   []backup.EarlyRecord
}

var _ node.Persistent = (*Server)(nil)

// TrackChanges implements node.Persistent.
func (s *Server) TrackChanges() {
	s.saved = msg.StateMemo{}
	s.prepares.Track()
}

func (s *Server) rcHash() uint64 {
	h := node.NewHasher()
	h.Uint64(s.inc)
	for _, b := range s.stopped {
		h.Bool(b)
	}
	s.early.Hash(h)
	return h.Sum()
}

// Persist implements node.Persistent.
func (s *Server) Persist(w node.Writer) {
	backup.PersistPrepares(&s.prepares, w)
	s.saved.Write(w, s.cfg, s.cfgHash, s.rcHash(), func() any {
		return witnessRC{Inc: s.inc, Stopped: s.stopped, Early: backup.EarlyToRecords(s.early)}
	}, func(*node.Enc) {})
}

// Restore implements node.Persistent.
func (s *Server) Restore(r node.Reader) error {
	who := fmt.Sprintf("witness/%d", s.me)
	var rc witnessRC
	st, err := msg.ReadState(r, who, s.cfg, func(*node.Dec) {}, &rc)
	if err != nil || !st.Found {
		return err
	}
	s.cfg, s.cfgHash, s.inc = st.Config, st.Hash, st.Config.Witness[s.me]
	if st.RC {
		if len(rc.Stopped) != len(s.stopped) {
			return fmt.Errorf("%s: rc: %d fences for %d shards", who, len(rc.Stopped), len(s.stopped))
		}
		s.inc, s.stopped = rc.Inc, rc.Stopped
		if s.early, err = backup.EarlyFromRecords(rc.Early); err != nil {
			return fmt.Errorf("%s: rc: %w", who, err)
		}
	}
	if err := backup.RestorePrepares(&s.prepares, r); err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	return nil
}
