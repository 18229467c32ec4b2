// Package reconfig is the reconfiguration service (thesis 3.3.2) as a
// deterministic node: it numbers configurations, runs one server
// replacement at a time (a data server replacement pre-empts a parity or
// witness replacement that is still stopping), postpones a replacement
// that would leave a stripe with more than f degraded blocks (the Server
// Liveness Criterion, thesis 3.4.2), and brings every server up to date
// with the configurations in order. In production its inputs are
// replicated with Raft; the model checker runs it as one node.
package reconfig

import (
	"slices"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Service is the reconfiguration node at msg.ReconfigAddr.
type Service struct {
	history []entry              // history[i] is configuration i
	acked   map[node.Addr]uint64 // the newest configuration each server acknowledged
	queue   []msg.Replace        // replacements asked for and not started
	op      *operation           // the replacement in progress
	fresh   []fresh              // replaced backups not caught up with a shard
	// degraded lists the data and parity servers (addresses) whose current
	// incarnation a replacement started and that have not reported
	// msg.Rebuilt: each counts as a degraded block in every stripe it
	// holds a block of (SLC below).
	degraded []node.Addr
}

// fresh records that backup was replaced in configuration since, and the
// data server of shard has not yet reported that it caught up (re-sent and
// had acknowledged every pending operation).
type fresh struct {
	Backup node.Addr
	Shard  int
	Since  uint64
}

type entry struct {
	cfg     msg.Config
	install *msg.Install
}

// operation is one replacement in its stopping phase.
type operation struct {
	req     msg.Replace
	num     uint64
	targets []node.Addr // servers whose answer it may need
	shards  map[node.Addr]msg.StopShardOK
	backups map[node.Addr]bool
}

// tick is the service's timer: it re-sends what awaits an answer.
const tick = node.TagTimer(node.TagReconfigTick)

// New returns the service starting from configuration 0.
func New(initial msg.Config) *Service {
	return &Service{history: []entry{{cfg: initial}}, acked: map[node.Addr]uint64{}}
}

func (s *Service) current() msg.Config { return s.history[len(s.history)-1].cfg }

// Config is the newest configuration.
func (s *Service) Config() msg.Config { return s.current() }

// History lists every configuration, oldest first.
func (s *Service) History() []msg.Config {
	out := make([]msg.Config, len(s.history))
	for i, e := range s.history {
		out[i] = e.cfg
	}
	return out
}

// Busy reports whether a replacement is in progress or queued (postponed
// ones included).
func (s *Service) Busy() bool { return s.op != nil || len(s.queue) > 0 }

// Degraded lists the data and parity servers replaced and not yet
// reported rebuilt.
func (s *Service) Degraded() []node.Addr { return slices.Clone(s.degraded) }

// Postponed lists the queued replacements that SLC holds back now: each
// would leave a stripe with more than f degraded blocks. They start once
// enough servers of the stripe report that they rebuilt.
func (s *Service) Postponed() []msg.Replace {
	var out []msg.Replace
	for _, r := range s.queue {
		if !s.allowed(r) {
			out = append(out, r)
		}
	}
	return out
}

// Init implements node.Node.
func (s *Service) Init(ctx node.Context) { ctx.SetTimer(tick, msg.RetryMin, msg.RetryMax) }

// Timer implements node.Node: re-send what is unanswered.
func (s *Service) Timer(ctx node.Context, _ node.Timer) {
	s.resend(ctx)
	ctx.SetTimer(tick, msg.RetryMin, msg.RetryMax)
}

// Handle implements node.Node.
func (s *Service) Handle(ctx node.Context, from node.Addr, m node.Message) {
	switch m := m.(type) {
	case msg.Replace:
		s.onReplace(ctx, m)
	case msg.StopShardOK:
		if s.op != nil && m.Num == s.op.num && s.op.req.Role == erasure.RoleData && m.Shard == s.op.req.Machine &&
			slices.Contains(s.op.targets, from) {
			s.op.shards[from] = m
			if s.shardQuorum() {
				s.finishData(ctx)
			}
		}
	case msg.StopBackupOK:
		if s.op != nil && m.Num == s.op.num && m.Role == s.op.req.Role && m.Machine == s.op.req.Machine &&
			slices.Contains(s.op.targets, from) {
			s.op.backups[from] = true
			if len(s.op.backups) == len(s.op.targets) {
				s.finishBackup(ctx)
			}
		}
	case msg.Resending:
		s.fresh = slices.DeleteFunc(s.fresh, func(f fresh) bool {
			return f.Shard == m.Shard && m.Num >= f.Since && !slices.Contains(m.Backups, f.Backup)
		})
	case msg.Rebuilt:
		s.onRebuilt(ctx, m)
		ctx.Send(from, msg.RebuiltOK(m)) // every copy, so that the server stops re-sending
	case msg.ConfigOK:
		if m.Num > s.acked[from] && m.Num < uint64(len(s.history)) {
			s.acked[from] = m.Num
		}
		s.sendConfig(ctx, from)
	}
}

func (s *Service) onReplace(ctx node.Context, r msg.Replace) {
	l := s.current().Layout
	if r.Machine < 0 || r.Machine >= l.N || r.Role < erasure.RoleData || r.Role > erasure.RoleWitness ||
		r.Role == erasure.RoleWitness && l.W == 0 {
		return
	}
	if r.Inc != s.incarnation(r.Role, r.Machine) || slices.Contains(s.queue, r) || s.op != nil && s.op.req == r {
		return // replaced already, or asked for already
	}
	s.queue = append(s.queue, r)
	s.schedule(ctx)
}

// onRebuilt notes that a degraded server rebuilt every block, and starts a
// replacement SLC held back, if one may start now.
func (s *Service) onRebuilt(ctx node.Context, m msg.Rebuilt) {
	if m.Machine < 0 || m.Machine >= s.current().Layout.N || m.Role != erasure.RoleData && m.Role != erasure.RoleParity ||
		m.Inc != s.incarnation(m.Role, m.Machine) {
		return // not a server that holds blocks, or an older incarnation
	}
	a := msg.RoleAddr(m.Role, m.Machine)
	if slices.Contains(s.degraded, a) {
		s.degraded = slices.DeleteFunc(s.degraded, func(d node.Addr) bool { return d == a })
		s.schedule(ctx)
	}
}

// The Server Liveness Criterion (thesis 3.4.2): a stripe whose f blocks
// are degraded (replaced, not yet rebuilt) is rebuilt from its g other
// blocks; replacing the server of one of those would leave g-1 and lose
// the stripe for good. So a data or parity server replacement waits in the
// queue while a stripe the server holds a block of has f degraded blocks
// besides its own, and is tried again whenever a server reports that it
// rebuilt (msg.Rebuilt). Postponing is always safe: while at most f blocks
// of every stripe are unavailable the postponed server is alive (else its
// stripe would already miss f+1 blocks), so nothing is lost by waiting;
// and if a stripe already misses more than f blocks, it is lost whatever
// the service does, and replacing one more of its servers cannot bring it
// back. The cost is availability beyond the fault model: a crashed data
// server whose replacement is postponed leaves its shard unavailable until
// the stripe's degraded servers rebuild, which they cannot do for a stripe
// that lost more than f blocks. Witnesses hold no blocks and are never
// postponed. Decision: a server counts as degraded until it has rebuilt
// every block, not per stripe (one report per incarnation); a server
// replaced again while degraded stays one degraded block.

// allowed reports whether SLC lets replacement r start now.
func (s *Service) allowed(r msg.Replace) bool {
	if r.Role == erasure.RoleWitness || Mutant == "ignore-slc" {
		return true
	}
	l := s.current().Layout
	self := msg.RoleAddr(r.Role, r.Machine)
	for _, st := range l.StripesAs(r.Machine, r.Role) {
		n := 0
		for pos := 0; pos < l.G; pos++ {
			if a := msg.DataAddr(l.DataMachine(st, pos)); a != self && slices.Contains(s.degraded, a) {
				n++
			}
		}
		for k := 0; k < l.F; k++ {
			if a := msg.ParityAddr(l.ParityMachine(st, k)); a != self && slices.Contains(s.degraded, a) {
				n++
			}
		}
		if n >= l.F {
			return false
		}
	}
	return true
}

// next is the queue index of the replacement to start: the first data
// server replacement SLC allows, else the first other one it allows; -1
// if none. Decision: data server replacements go first, as they pre-empt
// the others (3.3.2.2); a parity or witness replacement started ahead of a
// queued data server replacement would wait for the StopBackupOK of a data
// server that may be the crashed one.
func (s *Service) next() int {
	first := -1
	for i, r := range s.queue {
		if !s.allowed(r) {
			continue
		}
		if r.Role == erasure.RoleData {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

// schedule starts the next replacement if none is in progress. A data
// server replacement that may start pre-empts a parity or witness
// replacement still stopping, which starts over afterwards (3.3.2.2).
func (s *Service) schedule(ctx node.Context) {
	if s.op != nil {
		i := s.next()
		if s.op.req.Role == erasure.RoleData || i < 0 || s.queue[i].Role != erasure.RoleData {
			return
		}
		s.queue = append([]msg.Replace{s.op.req}, s.queue...)
		s.op = nil
	}
	s.startNext(ctx)
}

func (s *Service) startNext(ctx node.Context) {
	i := s.next()
	if i < 0 {
		return
	}
	r := s.queue[i]
	s.queue = slices.Delete(s.queue, i, i+1)
	op := &operation{req: r, num: s.current().Num + 1}
	l := s.current().Layout
	if r.Role == erasure.RoleData {
		op.shards = map[node.Addr]msg.StopShardOK{}
		for _, st := range l.StripesAs(r.Machine, erasure.RoleData) {
			for i, m := range l.Backups(st) {
				op.targets = appendNew(op.targets, backupAddr(l, i, m))
			}
		}
	} else {
		op.backups = map[node.Addr]bool{}
		for _, st := range l.StripesAs(r.Machine, r.Role) {
			for pos := 0; pos < l.G; pos++ {
				op.targets = appendNew(op.targets, msg.DataAddr(l.DataMachine(st, pos)))
			}
		}
	}
	slices.Sort(op.targets)
	s.op = op
	s.sendStops(ctx)
}

func (s *Service) sendStops(ctx node.Context) {
	op, cfg := s.op, s.current()
	for _, a := range op.targets {
		if op.req.Role == erasure.RoleData {
			if _, ok := op.shards[a]; !ok {
				ctx.Send(a, msg.StopShard{Num: op.num, Shard: op.req.Machine, Primary: cfg.Data[op.req.Machine]})
			}
		} else if !op.backups[a] {
			inc := cfg.Parity[op.req.Machine]
			if op.req.Role == erasure.RoleWitness {
				inc = cfg.Witness[op.req.Machine]
			}
			ctx.Send(a, msg.StopBackup{Num: op.num, Role: op.req.Role, Machine: op.req.Machine, Inc: inc})
		}
	}
}

// shardQuorum reports whether, for every stripe of the shard being
// replaced, w+1 of its f+w backups answered: then every commit quorum of
// the stripe (f of them) meets an answer, and the old data server can no
// longer gather f acknowledgements (thesis 3.3.2.1 and footnote 4).
// Decision, found by the checker: a backup replaced since the shard's
// operations committed, and not caught up with the shard, does not count:
// it may lack an operation that committed with its predecessor's
// acknowledgement (it is a degraded holder in the terms of thesis 3.4.1).
func (s *Service) shardQuorum() bool {
	l := s.current().Layout
	for _, st := range l.StripesAs(s.op.req.Machine, erasure.RoleData) {
		n := 0
		for i, m := range l.Backups(st) {
			a := backupAddr(l, i, m)
			if _, ok := s.op.shards[a]; ok && !s.isFresh(a, s.op.req.Machine) {
				n++
			}
		}
		if n < l.W+1 && !(Mutant == "quorum-one-short" && n == l.W) {
			return false
		}
	}
	return true
}

func (s *Service) finishData(ctx node.Context) {
	op := s.op
	var answers []msg.StopShardOK
	for _, a := range op.targets {
		if r, ok := op.shards[a]; ok {
			answers = append(answers, r)
		}
	}
	next := s.current().Clone()
	next.Num = op.num
	next.Data[op.req.Machine]++
	next.Changed = msg.DataAddr(op.req.Machine)
	s.degraded = appendNew(s.degraded, next.Changed) // the new data server starts degraded
	inst := Chain(op.req.Machine, answers)
	s.commit(ctx, entry{cfg: next, install: &inst})
}

func (s *Service) finishBackup(ctx node.Context) {
	op := s.op
	next := s.current().Clone()
	next.Num = op.num
	a := msg.ParityAddr(op.req.Machine)
	if op.req.Role == erasure.RoleWitness {
		a = msg.WitnessAddr(op.req.Machine)
	}
	for _, d := range op.targets { // the data servers sharing a stripe with it
		_, m, _ := msg.ParseAddr(d)
		s.fresh = append(s.fresh, fresh{Backup: a, Shard: m, Since: op.num})
	}
	if op.req.Role == erasure.RoleParity {
		next.Parity[op.req.Machine]++
		next.Changed = msg.ParityAddr(op.req.Machine)
		s.degraded = appendNew(s.degraded, next.Changed) // the new parity server starts degraded
	} else {
		next.Witness[op.req.Machine]++
		next.Changed = msg.WitnessAddr(op.req.Machine)
	}
	s.commit(ctx, entry{cfg: next})
}

func (s *Service) commit(ctx node.Context, e entry) {
	s.history = append(s.history, e)
	s.op = nil
	for _, a := range s.servers() {
		s.sendConfig(ctx, a)
	}
	s.schedule(ctx)
}

// sendConfig sends server a the configuration after the newest it has, or
// the newest that replaced it: a new incarnation starts from there.
func (s *Service) sendConfig(ctx node.Context, a node.Addr) {
	n := s.acked[a] + 1
	for k := len(s.history) - 1; k > int(n); k-- {
		if s.history[k].cfg.Changed == a {
			n = uint64(k)
			break
		}
	}
	if n < uint64(len(s.history)) {
		e := s.history[n]
		ctx.Send(a, msg.NewConfig{Config: e.cfg, Install: e.install})
	}
}

func (s *Service) resend(ctx node.Context) {
	if s.op != nil {
		s.sendStops(ctx)
	}
	for _, a := range s.servers() {
		s.sendConfig(ctx, a)
	}
}

func (s *Service) servers() []node.Addr {
	l := s.current().Layout
	var out []node.Addr
	for m := 0; m < l.N; m++ {
		out = append(out, msg.DataAddr(m), msg.ParityAddr(m))
		if l.W > 0 {
			out = append(out, msg.WitnessAddr(m))
		}
	}
	return out
}

func (s *Service) isFresh(backup node.Addr, shard int) bool {
	return slices.ContainsFunc(s.fresh, func(f fresh) bool { return f.Backup == backup && f.Shard == shard })
}

// incarnation is the current incarnation of the server playing role on m.
func (s *Service) incarnation(role erasure.Role, m int) uint64 {
	cfg := s.current()
	switch role {
	case erasure.RoleData:
		return cfg.Data[m]
	case erasure.RoleParity:
		return cfg.Parity[m]
	}
	return cfg.Witness[m]
}

func backupAddr(l erasure.Layout, i, m int) node.Addr {
	if i < l.F {
		return msg.ParityAddr(m)
	}
	return msg.WitnessAddr(m)
}

func appendNew(xs []node.Addr, a node.Addr) []node.Addr {
	if slices.Contains(xs, a) {
		return xs
	}
	return append(xs, a)
}

// Pending reports whether replacement r is in progress or queued.
func (s *Service) Pending(r msg.Replace) bool {
	return slices.Contains(s.queue, r) || s.op != nil && s.op.req == r
}
