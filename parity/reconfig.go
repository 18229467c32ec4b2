package parity

import (
	"cmp"
	"maps"
	"slices"

	"github.com/amalgam-store/amalgam/backup"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/recovery"
)

// reconfState is the parity server's part in server replacement (thesis
// 3.3.2) and data recovery (3.3.2.3).
type reconfState struct {
	inc      uint64 // this incarnation
	stopped  []bool // per shard: fenced by StopShard until the next configuration
	clients  map[clientKey]msg.ClientRecord
	degraded []bool              // per stripe: parity block not rebuilt (new incarnation)
	snaps    []*snapshot         // snapshots of the current configuration
	early    backup.Early        // stream messages from a newer configuration
	rebuilds []*recovery.Rebuild // background runs in flight, oldest first
	nonce    uint64
	kept     []msg.Prepare // committed deltas for stripes not rebuilt yet
	versions []version     // of the blocks this incarnation rebuilt
	ticking  bool          // the rebuild retry timer is set
	// Derived from degraded and rebuilds and kept up to date with them,
	// so that starting a run scans no stripe twice; not hashed (Hash
	// hashes what they are derived from; docs/recovery.md):
	left int // the degraded flags set
	next int // the background rebuild's cursor: every stripe below it is rebuilt or in a run in flight
	// report: this incarnation, started degraded by a replacement, has
	// rebuilt every block, and the reconfiguration service has not yet
	// acknowledged msg.Rebuilt; the retry timer re-sends it.
	report bool
}

type clientKey struct {
	shard  int
	client uint64
}

// snapshot is this server's copy of its parity blocks for one
// STRIPE-SNAPSHOT run. A copy is copy-on-write: it starts as the block's
// own contents (erasure.Blocks.Share) and is copied only before a delta
// is folded into it; own says which copies are this snapshot's alone.
type snapshot struct {
	requester node.Addr
	stripe    int // the run's first stripe
	nonce     uint64
	copies    [][]byte // per stripe of the run; nil when this server has not rebuilt the block
	own       []bool   // copies[i] is not shared (not hashed: a clone shares every copy)
	seen      uint64   // data positions whose marker arrived
	sent      bool     // the copies went to the requester and were dropped
	ord       uint64   // creation order, persisted so a restart keeps the snapshots' order (not hashed)
}

// fields writes the snapshot's record, but its copies and ord, to w (a
// node.Hasher or node.Enc).
func (sn *snapshot) fields(w node.Fields) {
	recovery.RecordHead(w, sn.requester, sn.stripe, sn.nonce)
	w.Uint64(sn.seen)
	w.Bool(sn.sent)
}

// mutable returns copies[i] for changing in place, copying it first if
// it is shared.
func (sn *snapshot) mutable(i int) []byte {
	if !sn.own[i] && Mutant != "snapshot-cow-shared" {
		sn.copies[i] = slices.Clone(sn.copies[i])
		sn.own[i] = true
	}
	return sn.copies[i]
}

func newReconfState(cfg msg.Config, me int) reconfState {
	return reconfState{inc: cfg.Parity[me], stopped: make([]bool, cfg.Layout.N), clients: map[clientKey]msg.ClientRecord{}}
}

func (r reconfState) clone() reconfState {
	c := r
	c.stopped = slices.Clone(r.stopped)
	c.clients = maps.Clone(r.clients)
	c.degraded = slices.Clone(r.degraded)
	c.early = slices.Clone(r.early)
	c.kept = slices.Clone(r.kept)
	c.versions = slices.Clone(r.versions)
	c.rebuilds = recovery.CloneAll(r.rebuilds)
	c.snaps = make([]*snapshot, len(r.snaps))
	for i, sn := range r.snaps {
		cp := *sn
		cp.copies = slices.Clone(sn.copies)
		cp.own = make([]bool, len(sn.own)) // both now share every copy
		clear(sn.own)
		c.snaps[i] = &cp
	}
	return c
}

func (r reconfState) hash(h *node.Hasher) {
	h.Uint64(r.inc)
	for _, b := range r.stopped {
		h.Bool(b)
	}
	keys := slices.SortedFunc(maps.Keys(r.clients), func(a, b clientKey) int {
		if a.shard != b.shard {
			return a.shard - b.shard
		}
		return cmp.Compare(a.client, b.client)
	})
	for _, k := range keys {
		rec := r.clients[k]
		h.Int(k.shard)
		h.Uint64(rec.Client)
		h.Uint64(rec.Seq)
		rec.Reply.Hash(h)
	}
	h.Bools(r.degraded)
	for _, sn := range r.snaps {
		sn.fields(h)
		h.OptBytesList(sn.copies)
	}
	r.early.Hash(h)
	h.Int(len(r.rebuilds))
	for _, x := range r.rebuilds {
		x.Hash(h)
	}
	h.Uint64(r.nonce)
	for _, p := range r.kept {
		p.Hash(h)
	}
	h.Bool(r.ticking)
	h.Bool(r.report)
	for _, v := range r.versions {
		h.Int(v.stripe)
		h.Int(v.count)
		for i := range v.prims {
			h.Uint64(v.prims[i])
			h.Uint64(v.opNums[i])
		}
	}
}

// accepts reports whether messages from primary for shard count: it is the
// shard's current data server and no replacement has fenced it.
func (s *Server) accepts(shard int, primary uint64) bool {
	return backup.FromPrimary(s.cfg, shard, primary) && !s.rc.stopped[shard]
}

// record keeps the latest committed result of a client on a shard.
func (s *Server) record(p msg.Prepare) {
	if p.Reply == nil {
		return
	}
	k := clientKey{p.Shard, p.Client}
	if old, ok := s.rc.clients[k]; !ok || p.Seq > old.Seq {
		s.setClient(k, msg.ClientRecord{Client: p.Client, Seq: p.Seq, Reply: *p.Reply})
	}
}

// Fenced lists the data servers this server has fenced (StopShard: it
// refuses their PREPAREs) for a replacement in progress, until the next
// configuration.
func (s *Server) Fenced() []node.Addr {
	return backup.Fenced(s.rc.stopped)
}

// onStopShard fences the shard's data server and reports what this server
// holds of the shard (thesis 3.3.2.1 step 1).
func (s *Server) onStopShard(ctx node.Context, from node.Addr, m msg.StopShard) {
	if m.Num != s.cfg.Num+1 || m.Shard < 0 || m.Shard >= s.cfg.Layout.N {
		return
	}
	s.rc.stopped[m.Shard] = Mutant != "no-fence"
	ctx.Send(from, msg.StopShardOK{Num: m.Num, Shard: m.Shard, OpNum: s.opNums[m.Shard],
		Prepares: s.prepares.OfShard(m.Shard), Clients: shardRecords(s.rc.clients, m.Shard)})
}

func shardRecords(all map[clientKey]msg.ClientRecord, shard int) []msg.ClientRecord {
	var out []msg.ClientRecord
	for k, r := range all {
		if k.shard == shard {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b msg.ClientRecord) int { return cmp.Compare(a.Client, b.Client) })
	return out
}

// onNewConfig moves to the next configuration. A configuration that gives
// this machine's parity server a new incarnation starts it afresh and
// degraded; one that replaced a data server installs the surviving chain
// (thesis 3.3.2.1 step 3).
func (s *Server) onNewConfig(ctx node.Context, from node.Addr, m msg.NewConfig) {
	fresh := m.Config.Num > s.cfg.Num && m.Config.Parity[s.me] > s.rc.inc
	if m.Config.Num != s.cfg.Num+1 && !fresh {
		ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
		return
	}
	early := s.rc.early.Take()
	defer func() {
		for _, e := range early {
			s.Handle(ctx, e.From, e.Msg)
		}
	}()
	if fresh {
		pace := s.pace.Settings()
		*s = *New(m.Config, s.me, s.code)
		s.pace = pace
		s.rc.degraded = make([]bool, s.cfg.Layout.Stripes)
		for _, st := range s.cfg.Layout.StripesAs(s.me, erasure.RoleParity) {
			s.rc.degraded[st] = true
			s.rc.left++
		}
		ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
		s.rebuildNext(ctx)
		return
	}
	if in := m.Install; in != nil {
		s.install(in)
	}
	s.cfg = m.Config
	s.cfgHash = node.HashOf(s.cfg)
	clear(s.rc.stopped)
	for _, sn := range s.rc.snaps {
		s.saved.snapChanged(sn)
	}
	s.rc.snaps = nil // 3.3.2.3: snapshots end with their configuration
	if len(s.rc.rebuilds) > 0 {
		s.rc.rebuilds, s.rc.next = nil, 0
		defer s.rebuildNext(ctx) // start over in the new configuration
	}
	ctx.Send(from, msg.ConfigOK{Num: s.cfg.Num})
}

// install applies every operation of the chain that this server holds a
// parity block for and has not applied, then forgets the old data server's
// PREPAREs and restarts the shard's op numbers.
func (s *Server) install(in *msg.Install) {
	d := in.Shard
	l := s.cfg.Layout
	todo := slices.Clone(in.Chain)
	done := map[msg.PrepKey]bool{} // a held PREPARE may also come in the chain
	for _, h := range s.prepares.List() {
		if h.P.Shard == d && h.P.OpNum <= in.Upto && Mutant != "install-chain-only" {
			todo = append(todo, h.P)
		}
	}
	for _, p := range todo {
		if r, _ := l.RoleOf(p.Stripe, s.me); r != erasure.RoleParity {
			continue
		}
		h, held := s.prepares.Get(p.Key())
		if held && h.Applied || !held && p.OpNum <= s.opNums[d] || done[p.Key()] || s.reflected(p) {
			continue
		}
		done[p.Key()] = true
		if !s.isDegraded(p.Stripe) && p.Delta != nil {
			_, idx := l.RoleOf(p.Stripe, s.me)
			s.code.ApplyDelta(s.blocks.Mutable(uint64(p.Stripe)), idx, p.Pos, p.Delta)
		}
	}
	for k := range s.rc.clients {
		if k.shard == d {
			delete(s.rc.clients, k)
			s.saved.clientChanged(k)
		}
	}
	for _, r := range in.Clients {
		s.setClient(clientKey{d, r.Client}, r)
	}
	s.prepares.RemoveShard(d)
	s.opNums[d] = 0
}

func (s *Server) isDegraded(st int) bool { return s.rc.degraded != nil && s.rc.degraded[st] }

// Degraded reports whether this server has not rebuilt stripe st's block.
func (s *Server) Degraded(st int) bool { return s.isDegraded(st) }

// onMarker handles a data server's snapshot marker (thesis 3.3.2.3 step
// 3): the first marker of a snapshot run takes this server's cut across
// the run: a copy-on-write copy of each parity block with every held
// PREPARE folded in; later PREPAREs from data servers whose marker has
// not come are folded into the copies; once every data server's marker
// has come, the copies go to the requester.
func (s *Server) onMarker(ctx node.Context, m msg.SnapshotMarker) {
	l := s.cfg.Layout
	sts := msg.RunStripes(m.Stripe, m.Count, l.N)
	if m.Num != s.cfg.Num || m.Stripe < 0 || sts[len(sts)-1] >= l.Stripes {
		return
	}
	r, idx := l.RoleOf(m.Stripe, s.me)
	dr, pos := l.RoleOf(m.Stripe, m.Shard)
	if r != erasure.RoleParity || dr != erasure.RoleData {
		return
	}
	sn := s.findSnapshot(m.Requester, m.Stripe, m.Nonce)
	if sn == nil {
		s.saved.ord++
		sn = &snapshot{requester: m.Requester, stripe: m.Stripe, nonce: m.Nonce,
			copies: make([][]byte, len(sts)), own: make([]bool, len(sts)), ord: s.saved.ord}
		for i, st := range sts {
			if m.Requester != msg.ParityAddr(s.me) && !s.isDegraded(st) && (i == 0 || Mutant != "snapshot-mixed-cuts") {
				s.copyAt(sn, i, st, idx)
			}
		}
		s.rc.snaps = slices.DeleteFunc(s.rc.snaps, func(o *snapshot) bool {
			return o.requester == m.Requester && o.stripe == m.Stripe
		})
		s.rc.snaps = append(s.rc.snaps, sn)
	}
	sn.seen |= 1 << pos
	s.saved.snapChanged(sn)
	if m.Requester == msg.ParityAddr(s.me) {
		return // this server's own rebuild: it waits for the markers, copies and answers nothing
	}
	if !sn.sent && sn.seen == 1<<l.G-1 && Mutant == "snapshot-mixed-cuts" {
		for i, st := range sts[1:] { // the later stripes' copies taken at the last marker: a second cut
			if !s.isDegraded(st) && sn.copies[i+1] == nil {
				s.copyAt(sn, i+1, st, idx)
			}
		}
	}
	if !sn.sent && (sn.seen == 1<<l.G-1 || Mutant == "snapshot-first-marker") {
		ctx.Send(m.Requester, msg.SnapshotParity{Num: m.Num, Stripe: m.Stripe, Nonce: m.Nonce, Index: idx,
			Block: sn.copies[0], Rest: sn.copies[1:]})
		sn.sent, sn.copies, sn.own = true, nil, nil
	}
}

// Decision: a snapshot drops its copies once sent (it stays, so that a
// marker repeated under the same nonce takes no second cut). A lost
// answer is not sent again: the requester, hearing nothing, starts a new
// round under a new nonce. Kept copies would be persisted, and hashed,
// with every later change of the server's state.

// copyAt makes snapshot copy i, of stripe st: the parity block shared
// copy-on-write, with every held PREPARE of the stripe folded in.
func (s *Server) copyAt(sn *snapshot, i, st, idx int) {
	sn.copies[i], sn.own[i] = s.blocks.Share(uint64(st)), false
	for _, h := range s.prepares.List() {
		if h.P.Stripe == st && !h.Applied && h.P.Delta != nil {
			s.code.ApplyDelta(sn.mutable(i), idx, h.P.Pos, h.P.Delta)
		}
	}
}

func (s *Server) findSnapshot(req node.Addr, st int, nonce uint64) *snapshot {
	if sn := s.findRun(req, st); sn != nil && sn.nonce == nonce {
		return sn
	}
	return nil
}

// findRun is req's snapshot of the run starting at stripe st, if any.
func (s *Server) findRun(req node.Addr, st int) *snapshot {
	for i := len(s.rc.snaps) - 1; i >= 0; i-- { // newest first: markers follow their snapshot closely
		if sn := s.rc.snaps[i]; sn.stripe == st && sn.requester == req {
			return sn
		}
	}
	return nil
}

// snapPrepare folds an accepted PREPARE into every snapshot of its stripe
// still waiting for its data server's marker.
func (s *Server) snapPrepare(p msg.Prepare) {
	if p.Delta == nil {
		return
	}
	l := s.cfg.Layout
	_, idx := l.RoleOf(p.Stripe, s.me)
	for _, sn := range s.rc.snaps {
		d := p.Stripe - sn.stripe
		if d < 0 || d%l.N != 0 || d/l.N >= len(sn.copies) {
			continue
		}
		if i := d / l.N; sn.copies[i] != nil && sn.seen&(1<<p.Pos) == 0 && Mutant != "snapshot-copy-frozen" {
			s.code.ApplyDelta(sn.mutable(i), idx, p.Pos, p.Delta)
		}
	}
}

// Incarnation implements node.Incarnated.
func (s *Server) Incarnation() uint64 { return s.rc.inc }

// ConfigNum is the number of the configuration this server is in.
func (s *Server) ConfigNum() uint64 { return s.cfg.Num }

// PeerVersion implements node.Peered: the server addresses its peers at
// the incarnations of its configuration.
func (s *Server) PeerVersion() uint64 { return s.cfg.Num }

// PeerIncarnations implements node.Peered.
func (s *Server) PeerIncarnations(fn func(node.Addr, uint64)) { s.cfg.Incarnations(fn) }

// PrimaryOf is the incarnation of shard's data server this server accepts.
func (s *Server) PrimaryOf(shard int) uint64 { return s.cfg.Data[shard] }

// DegradedBlocks is the number of parity blocks not yet rebuilt.
func (s *Server) DegradedBlocks() int { return s.rc.left }
