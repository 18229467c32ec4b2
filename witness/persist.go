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
	s.saved = persistMemo{}
	s.prepares.Track()
}

// persistMemo remembers the hashes of what Persist last wrote.
type persistMemo struct{ cfg, rc uint64 }

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
	if s.saved.cfg != s.cfgHash {
		w.Put("cfg", node.GobBytes(s.cfg))
		s.saved.cfg = s.cfgHash
	}
	if rh := s.rcHash(); s.saved.rc != rh {
		w.Put("rc", node.GobBytes(witnessRC{Inc: s.inc, Stopped: s.stopped, Early: backup.EarlyToRecords(s.early)}))
		s.saved.rc = rh
	}
	var m node.Enc
	m.Uint64(s.cfgHash)
	w.Put("meta", m.B)
}

// Restore implements node.Persistent.
func (s *Server) Restore(r node.Reader) error {
	v, ok, err := r.Get("meta")
	if err != nil || !ok {
		return err
	}
	d := node.NewDec(v)
	cfgHash := d.Uint64()
	if err := d.Err(); err != nil {
		return fmt.Errorf("witness/%d: meta: %w", s.me, err)
	}
	if err := s.restoreConfig(r, cfgHash); err != nil {
		return err
	}
	if err := backup.RestorePrepares(&s.prepares, r); err != nil {
		return fmt.Errorf("witness/%d: %w", s.me, err)
	}
	return nil
}

func (s *Server) restoreConfig(r node.Reader, cfgHash uint64) error {
	cfg, found, err := msg.ReadConfig(r, fmt.Sprintf("witness/%d", s.me), s.cfg, cfgHash)
	if err != nil || !found {
		return err
	}
	s.cfg, s.cfgHash, s.inc = cfg, cfgHash, cfg.Witness[s.me]
	v, ok, err := r.Get("rc")
	if err != nil || !ok {
		return err
	}
	var rc witnessRC
	if err := node.GobDecode(v, &rc); err != nil {
		return fmt.Errorf("witness/%d: rc: %w", s.me, err)
	}
	if len(rc.Stopped) != len(s.stopped) {
		return fmt.Errorf("witness/%d: rc: %d fences for %d shards", s.me, len(rc.Stopped), len(s.stopped))
	}
	s.inc, s.stopped = rc.Inc, rc.Stopped
	if s.early, err = backup.EarlyFromRecords(rc.Early); err != nil {
		return fmt.Errorf("witness/%d: rc: %w", s.me, err)
	}
	return nil
}
