package witness

import (
	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// accepts reports whether messages from primary for shard count: it is the
// shard's current data server and no replacement has fenced it.
func (s *Server) accepts(shard int, primary uint64) bool {
	return backup.FromPrimary(s.cfg, shard, primary) && !s.stopped[shard]
}

// onStopShard fences the shard's data server and reports the shard's held
// PREPAREs (thesis 3.3.3: witnesses count toward the replacement quorum).
func (s *Server) onStopShard(ctx node.Context, from node.Addr, m msg.StopShard) {
	if m.Num != s.cfg.Num+1 || m.Shard < 0 || m.Shard >= s.cfg.Layout.N {
		return
	}
	s.stopped[m.Shard] = true
	ctx.Send(from, msg.StopShardOK{Num: m.Num, Shard: m.Shard, Prepares: s.prepares.OfShard(m.Shard)})
}

// onNewConfig moves to the next configuration: a new incarnation of this
// witness starts empty; a data server replacement drops the old data
// server's PREPAREs, which the parity servers have installed.
func (s *Server) onNewConfig(ctx node.Context, from node.Addr, m msg.NewConfig) {
	fresh := m.Config.Num > s.cfg.Num && m.Config.Witness[s.me] > s.inc
	if m.Config.Num != s.cfg.Num+1 && !fresh {
		ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
		return
	}
	early := s.early.Take()
	defer func() {
		for _, e := range early {
			s.Handle(ctx, e.From, e.Msg)
		}
	}()
	if fresh {
		*s = *New(m.Config, s.me)
	} else {
		if in := m.Install; in != nil {
			s.prepares.RemoveShard(in.Shard)
		}
		s.cfg = m.Config
		s.cfgHash = node.HashOf(s.cfg)
		clear(s.stopped)
	}
	ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
}

// Fenced lists the data servers this witness has fenced (StopShard: it
// refuses their PREPAREs) for a replacement in progress, until the next
// configuration.
func (s *Server) Fenced() []node.Addr {
	return backup.Fenced(s.stopped)
}

// Incarnation implements node.Incarnated.
func (s *Server) Incarnation() uint64 { return s.inc }

// ConfigNum is the number of the configuration this server is in.
func (s *Server) ConfigNum() uint64 { return s.cfg.Num }

// PeerVersion implements node.Peered: the server addresses its peers at
// the incarnations of its configuration.
func (s *Server) PeerVersion() uint64 { return s.cfg.Num }

// PeerIncarnations implements node.Peered.
func (s *Server) PeerIncarnations(fn func(node.Addr, uint64)) { s.cfg.Incarnations(fn) }
