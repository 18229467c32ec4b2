// Package parity is Amalgam's parity server (thesis 3.3.1): it accepts
// PREPAREs from the current data server of each shard, acknowledges them,
// and folds coefficient x delta into its parity block when the operation
// commits.
package parity

import (
	"maps"
	"slices"

	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/recovery"
)

// Server is one parity server. It is a node.Node.
type Server struct {
	cfg      msg.Config
	me       int
	code     *erasure.Code // immutable, shared by clones
	prepares backup.PrepareSet
	opNums   []uint64        // per shard: the highest op number applied
	blocks   *erasure.Blocks // parity blocks by stripe number
	cfgHash  uint64
	rc       reconfState
	saved    persistMemo     // what Persist last wrote (persist.go); not state
	pace     recovery.Pacing // the background rebuild's pause (recovery.go); a setting, not state
}

// New returns the parity server of machine me. The code must match the
// layout's g and f.
func New(cfg msg.Config, me int, code *erasure.Code) *Server {
	s := &Server{cfg: cfg, me: me, code: code, prepares: backup.NewPrepareSet(),
		opNums: make([]uint64, cfg.Layout.N), blocks: erasure.NewBlocks(cfg.Layout.BlockSize),
		rc: newReconfState(cfg, me)}
	s.cfgHash = node.HashOf(cfg)
	return s
}

// Init implements node.Node.
// After a restart it resumes rebuilding degraded blocks (a fresh server
// has none), and re-sends an unacknowledged msg.Rebuilt.
func (s *Server) Init(ctx node.Context) {
	s.rebuildNext(ctx)
	if s.rc.report {
		s.tick(ctx)
	}
}

// Handle implements node.Node.
func (s *Server) Handle(ctx node.Context, from node.Addr, m node.Message) {
	if backup.Ahead(s.cfg, m) || s.rc.early.Holds(from) {
		s.rc.early.Hold(ctx, s.cfg.Num, from, m)
		return
	}
	switch m := m.(type) {
	case msg.Prepare:
		if !backup.Acceptable(s.cfg, s.me, erasure.RoleParity, m) || s.rc.stopped[m.Shard] {
			return
		}
		// A copy of a PREPARE this server holds (re-sent by a data server
		// that lost its acknowledgement) changes nothing: its delta is in
		// the snapshot copies already.
		if _, held := s.prepares.Get(m.Key()); !held {
			s.prepares.Add(m)
			s.snapPrepare(m)
		}
		if Mutant == "apply-on-prepare" {
			s.apply(m.Key())
		}
		ctx.Stream(from, msg.PrepareOK{Shard: m.Shard, Primary: m.Primary, OpNum: m.OpNum, Stripe: m.Stripe, Inc: s.rc.inc})
	case msg.Commit:
		if s.accepts(m.Shard, m.Primary) {
			s.apply(msg.PrepKey{Shard: m.Shard, OpNum: m.OpNum, Stripe: m.Stripe})
		}
	case msg.PrepareDrop:
		if s.accepts(m.Shard, m.Primary) {
			k := msg.PrepKey{Shard: m.Shard, OpNum: m.OpNum, Stripe: m.Stripe}
			s.apply(k) // in case the COMMIT never came
			s.prepares.Remove(k)
		}
	case msg.StopShard:
		s.onStopShard(ctx, from, m)
	case msg.RebuiltOK:
		s.onRebuiltOK(m)
	case msg.NewConfig:
		s.onNewConfig(ctx, from, m)
	case msg.SnapshotMarker:
		s.onMarker(ctx, m)
		s.tryRebuild(ctx, m.Stripe)
	case msg.SnapshotData:
		s.onSnapshotData(m)
		s.tryRebuild(ctx, m.Stripe)
	case msg.SnapshotParity:
		s.onSnapshotParity(m)
		s.tryRebuild(ctx, m.Stripe)
	}
}

// apply folds a prepared delta into the parity block, once.
func (s *Server) apply(k msg.PrepKey) {
	e, ok := s.prepares.Get(k)
	if !ok || e.Applied && Mutant != "apply-twice" {
		return
	}
	s.record(e.P)
	switch {
	case e.P.Delta == nil:
	case s.reflected(e.P): // the rebuilt block has it already (thesis 3.3.2.3)
	case s.isDegraded(k.Stripe):
		s.rc.kept = append(s.rc.kept, e.P) // applied once the block is rebuilt
	default:
		_, idx := s.cfg.Layout.RoleOf(k.Stripe, s.me)
		s.code.ApplyDelta(s.blocks.Mutable(uint64(k.Stripe)), idx, mutantPos(e.P.Pos), e.P.Delta)
	}
	s.prepares.MarkApplied(k)
	s.opNums[k.Shard] = max(s.opNums[k.Shard], k.OpNum)
}

// Block returns the parity block of stripe st. Callers must not modify it.
func (s *Server) Block(st int) []byte { return s.blocks.Get(uint64(st)) }

// Machine is the machine this server runs on.
func (s *Server) Machine() int { return s.me }

// OpNum is the highest op number of shard applied here.
func (s *Server) OpNum(shard int) uint64 { return s.opNums[shard] }

// Prepares lists the held PREPAREs in key order, with whether each has
// been applied.
func (s *Server) Prepares() []backup.Held { return s.prepares.List() }

// HoldsOn reports whether a held PREPARE is for stripe st.
func (s *Server) HoldsOn(st int) bool { return s.prepares.HoldsOn(st) }

// Clone implements node.Node.
func (s *Server) Clone() node.Node {
	c := *s
	c.prepares = s.prepares.Clone()
	c.opNums = slices.Clone(s.opNums)
	c.blocks = s.blocks.Clone()
	c.rc = s.rc.clone()
	c.saved.clients = maps.Clone(s.saved.clients)
	c.saved.snaps = maps.Clone(s.saved.snaps)
	return &c
}

// Hash implements node.Node.
func (s *Server) Hash() uint64 {
	h := node.NewHasher()
	h.Uint64(s.cfgHash)
	h.Int(s.me)
	h.Uint64(s.prepares.Hash())
	for _, n := range s.opNums {
		h.Uint64(n)
	}
	h.Uint64(s.blocks.Hash())
	s.rc.hash(h)
	h.Bool(s.pace.Waiting) // a rebuildPaused timer is pending: it changes what handlers do
	return h.Sum()
}
