// Package witness is Amalgam's replication witness (thesis 3.3.3): it holds
// PREPAREs from the current data server of each shard, acknowledges them so
// they count toward the commit quorum, and discards them on PREPARE-DROP.
// It stores no blocks.
package witness

import (
	"slices"

	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Server is one witness. It is a node.Node.
type Server struct {
	cfg      msg.Config
	me       int
	prepares backup.PrepareSet
	cfgHash  uint64
	inc      uint64 // this incarnation
	stopped  []bool // per shard: fenced by StopShard until the next configuration
	early    backup.Early
	saved    msg.StateMemo // what Persist last wrote (persist.go); not state
}

// New returns the witness of machine me.
func New(cfg msg.Config, me int) *Server {
	return &Server{cfg: cfg, me: me, prepares: backup.NewPrepareSet(), cfgHash: node.HashOf(cfg),
		inc: cfg.Witness[me], stopped: make([]bool, cfg.Layout.N)}
}

// Init implements node.Node.
func (s *Server) Init(node.Context) {}

// Timer implements node.Node; the witness sets no timers.
func (s *Server) Timer(node.Context, node.Timer) {}

// Handle implements node.Node.
func (s *Server) Handle(ctx node.Context, from node.Addr, m node.Message) {
	if backup.Ahead(s.cfg, m) || s.early.Holds(from) {
		s.early.Hold(ctx, s.cfg.Num, from, m)
		return
	}
	switch m := m.(type) {
	case msg.Prepare:
		if !backup.Acceptable(s.cfg, s.me, erasure.RoleWitness, m) || s.stopped[m.Shard] {
			return
		}
		if Mutant != "witness-ack-without-holding" {
			s.prepares.Add(m)
		}
		ctx.Stream(from, msg.PrepareOK{Shard: m.Shard, Primary: m.Primary, OpNum: m.OpNum, Stripe: m.Stripe, Inc: s.inc})
	case msg.PrepareDrop:
		if s.accepts(m.Shard, m.Primary) {
			s.prepares.Remove(msg.PrepKey{Shard: m.Shard, OpNum: m.OpNum, Stripe: m.Stripe})
		}
	case msg.StopShard:
		s.onStopShard(ctx, from, m)
	case msg.NewConfig:
		s.onNewConfig(ctx, from, m)
	}
}

// Machine is the machine this witness runs on.
func (s *Server) Machine() int { return s.me }

// Prepares lists the held PREPAREs in key order.
func (s *Server) Prepares() []backup.Held { return s.prepares.List() }

// HoldsOn reports whether a held PREPARE is for stripe st.
func (s *Server) HoldsOn(st int) bool { return s.prepares.HoldsOn(st) }

// Clone implements node.Node.
func (s *Server) Clone() node.Node {
	c := *s
	c.prepares = s.prepares.Clone()
	c.stopped = slices.Clone(s.stopped)
	c.early = slices.Clone(s.early)
	return &c
}

// Hash implements node.Node.
func (s *Server) Hash() uint64 {
	h := node.NewHasher()
	h.Uint64(s.cfgHash)
	h.Int(s.me)
	h.Uint64(s.prepares.Hash())
	h.Uint64(s.inc)
	for _, b := range s.stopped {
		h.Bool(b)
	}
	s.early.Hash(h)
	return h.Sum()
}
