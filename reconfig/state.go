package reconfig

import (
	"maps"
	"slices"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Clone implements node.Node. History entries are never modified, so the
// clone shares them.
func (s *Service) Clone() node.Node {
	c := &Service{history: s.history[:len(s.history):len(s.history)], acked: maps.Clone(s.acked),
		queue: slices.Clone(s.queue), fresh: slices.Clone(s.fresh), degraded: slices.Clone(s.degraded)}
	if s.op != nil {
		op := *s.op
		op.shards = maps.Clone(s.op.shards)
		op.backups = maps.Clone(s.op.backups)
		c.op = &op
	}
	return c
}

// Hash implements node.Node.
func (s *Service) Hash() uint64 {
	h := node.NewHasher()
	h.Int(len(s.history))
	for _, e := range s.history {
		msg.NewConfig{Config: e.cfg, Install: e.install}.Hash(h)
	}
	for _, a := range slices.Sorted(maps.Keys(s.acked)) {
		h.String(string(a))
		h.Uint64(s.acked[a])
	}
	node.HashAll(h, s.queue)
	for _, f := range s.fresh {
		h.String(string(f.Backup))
		h.Int(f.Shard)
		h.Uint64(f.Since)
	}
	node.HashStrings(h, s.degraded)
	h.Bool(s.op != nil)
	if s.op != nil {
		s.op.req.Hash(h)
		h.Uint64(s.op.num)
		for _, a := range s.op.targets {
			h.String(string(a))
			if r, ok := s.op.shards[a]; ok {
				r.Hash(h)
			}
			h.Bool(s.op.backups[a])
		}
	}
	return h.Sum()
}
