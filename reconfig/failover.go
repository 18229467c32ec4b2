package reconfig

import (
	"maps"
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
)

// Failover is the failure detector of the reconfiguration service, a
// deterministic node its leader runs beside Service. Machines and spares
// send it heartbeats; it counts rounds (its own timer) and suspects a
// machine that was silent for Suspect rounds in a row, then proposes to
// move the machine's slot to a live spare (Move to LogAddr), which also
// replaces every server of the slot. Two suspicions get distinct spares;
// a move the address book does not show after Retry rounds is proposed
// again. After it starts leading (Lead) or resumes from a pause (Resumed)
// it suspects no one for Grace rounds (machines may still be looking for
// the leader) and counts silence from then on: older counts are stale.
// Its state is the leader's own; a new leader starts a fresh one.
type Failover struct {
	cfg     FailoverConfig
	term    uint64
	version uint64         // of the address book
	hosts   []string       // host serving slot m, as the address book says
	spares  []string       // registered spares
	heard   map[string]int // rounds since each host was last heard (from this leadership on)
	fresh   map[string]bool
	grace   int
	since   int            // rounds since the latest Lead or Resumed
	moves   map[int]move   // slot moves proposed and not yet applied
	asked   map[string]int // spare registrations proposed: round of since
}

type move struct {
	From, To string
	At       int // round proposed (since)
}

// FailoverConfig sets the detector's rounds.
type FailoverConfig struct {
	Round   time.Duration // one detector round
	Suspect int           // silent rounds before a machine is suspected; 0: never
	Grace   int           // rounds after Lead or Resumed with no suspicion
	Retry   int           // rounds before a move not applied is proposed again
}

// FailoverAddr is where the failover node runs; LogAddr is where it sends
// what must be ordered by the service's log (Move, Register).
const (
	FailoverAddr node.Addr = "failover"
	LogAddr      node.Addr = "reconfig-log"
)

// Heartbeat says Host is alive; Machine is its slot, or -1 for a spare.
type Heartbeat struct {
	Host    string
	Machine int
}

// View is the address book as the service's log applied it; a View older
// than one seen already (by Version) is ignored.
type View struct {
	Version       uint64
	Hosts, Spares []string
}

// Lead starts a leadership: everything known before is dropped.
type Lead struct{ Term uint64 }

// Resumed says the host's loop stalled for about Rounds rounds (a pause):
// no heartbeat was handled meanwhile.
type Resumed struct{ Rounds int }

// Move proposes moving slot Machine from host From to the spare To. Term
// and Since say which leadership decided it, and how many rounds after it
// started or resumed.
type Move struct {
	Machine  int
	From, To string
	Term     uint64
	Since    int
}

// Register proposes adding a spare.
type Register struct{ Host string }

// Hash implements node.Message.
func (m Heartbeat) Hash(h *node.Hasher) { h.Tag(node.TagHeartbeat); h.String(m.Host); h.Int(m.Machine) }

// Hash implements node.Message.
func (m View) Hash(h *node.Hasher) {
	h.Tag(node.TagView)
	h.Uint64(m.Version)
	node.HashStrings(h, m.Hosts)
	node.HashStrings(h, m.Spares)
}

// Hash implements node.Message.
func (m Lead) Hash(h *node.Hasher) { h.Tag(node.TagLead); h.Uint64(m.Term) }

// Hash implements node.Message.
func (m Resumed) Hash(h *node.Hasher) { h.Tag(node.TagResumed); h.Int(m.Rounds) }

// Hash implements node.Message.
func (m Move) Hash(h *node.Hasher) {
	h.Tag(node.TagMove)
	h.Int(m.Machine)
	h.String(m.From)
	h.String(m.To)
	h.Uint64(m.Term)
	h.Int(m.Since)
}

// Hash implements node.Message.
func (m Register) Hash(h *node.Hasher) { h.Tag(node.TagRegister); h.String(m.Host) }

// round is the detector's timer, fired once a round.
const round = node.TagTimer(node.TagFailoverTick)

// NewFailover returns a detector that knows no host yet.
func NewFailover(cfg FailoverConfig) *Failover {
	f := &Failover{cfg: cfg}
	f.reset()
	return f
}

func (f *Failover) reset() {
	f.heard, f.fresh, f.moves, f.asked = map[string]int{}, map[string]bool{}, map[int]move{}, map[string]int{}
	f.grace, f.since = f.cfg.Grace, 0
}

// Init implements node.Node.
func (f *Failover) Init(ctx node.Context) { ctx.SetTimer(round, f.cfg.Round, f.cfg.Round) }

// Handle implements node.Node.
func (f *Failover) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	switch m := m.(type) {
	case Heartbeat:
		f.fresh[m.Host] = true
		if _, ok := f.heard[m.Host]; !ok {
			f.heard[m.Host] = 0
		}
		if m.Machine < 0 && !slices.Contains(f.hosts, m.Host) && !slices.Contains(f.spares, m.Host) {
			if at, ok := f.asked[m.Host]; !ok || f.since-at >= f.cfg.Retry {
				f.asked[m.Host] = f.since
				ctx.Send(LogAddr, Register{Host: m.Host})
			}
		}
	case View:
		if m.Version < f.version {
			return
		}
		f.version, f.hosts, f.spares = m.Version, slices.Clone(m.Hosts), slices.Clone(m.Spares)
		for s, mv := range f.moves {
			if s >= len(f.hosts) || f.hosts[s] != mv.From {
				delete(f.moves, s) // applied, or the slot moved otherwise
			}
		}
	case Lead:
		f.term = m.Term
		f.reset()
	case Resumed:
		// Rounds restart from 0: keep the rounds since each move and spare
		// registration was proposed, so their retries keep their pace.
		for s, mv := range f.moves {
			mv.At -= f.since
			f.moves[s] = mv
		}
		for h, at := range f.asked {
			f.asked[h] = at - f.since
		}
		f.since = 0
		if Mutant == "stale-after-resume" {
			for h := range f.heard { // as wall-clock last-heard times would
				f.heard[h] += m.Rounds
			}
			return
		}
		for h := range f.heard {
			f.heard[h] = 0
		}
		clear(f.fresh)
		f.grace = f.cfg.Grace
	}
}

// Timer implements node.Node: one round.
func (f *Failover) Timer(ctx node.Context, _ node.Timer) {
	ctx.SetTimer(round, f.cfg.Round, f.cfg.Round)
	f.since++
	for _, h := range f.hosts {
		if _, ok := f.heard[h]; !ok {
			f.heard[h] = 0 // silent from this leadership's start on
		}
	}
	for _, h := range slices.Sorted(maps.Keys(f.heard)) {
		if f.fresh[h] || f.grace > 0 {
			f.heard[h] = 0 // silence counts from the end of the grace on
		} else {
			f.heard[h]++
		}
	}
	clear(f.fresh)
	if f.grace > 0 {
		f.grace--
		return
	}
	if f.cfg.Suspect <= 0 {
		return
	}
	for m, h := range f.hosts {
		if f.heard[h] < f.cfg.Suspect {
			continue
		}
		if mv, ok := f.moves[m]; ok && mv.From == h && f.since-mv.At < f.cfg.Retry {
			continue // proposed, not applied yet
		}
		delete(f.moves, m)
		to := f.spareFor()
		if to == "" {
			continue
		}
		f.moves[m] = move{From: h, To: to, At: f.since}
		ctx.Send(LogAddr, Move{Machine: m, From: h, To: to, Term: f.term, Since: f.since})
	}
}

// spareFor is the first live spare no proposed move names.
func (f *Failover) spareFor() string {
	for _, s := range f.spares {
		if !f.live(s) {
			continue
		}
		taken := false
		for _, mv := range f.moves {
			taken = taken || mv.To == s && Mutant != "same-spare"
		}
		if !taken {
			return s
		}
	}
	return ""
}

func (f *Failover) live(h string) bool {
	n, ok := f.heard[h]
	return ok && (f.cfg.Suspect <= 0 || n < f.cfg.Suspect)
}

// LiveSpare is a registered spare heard from recently, or "".
func (f *Failover) LiveSpare() string {
	for _, s := range f.spares {
		if f.live(s) {
			return s
		}
	}
	return ""
}

// Suspected lists the slots whose host is silent for Suspect rounds.
func (f *Failover) Suspected() []int {
	var out []int
	for m, h := range f.hosts {
		if f.cfg.Suspect > 0 && f.grace == 0 && f.heard[h] >= f.cfg.Suspect {
			out = append(out, m)
		}
	}
	return out
}

// ApplyMove applies mv to the address book (hosts, spares) if its slot is
// still served by mv.From and mv.To is still a spare. It returns the new
// lists and the replacements that must follow: every server of the slot,
// which the spare does not have.
func ApplyMove(hosts, spares []string, cfg msg.Config, mv Move) ([]string, []string, []msg.Replace, bool) {
	m := mv.Machine
	if m < 0 || m >= len(hosts) || hosts[m] != mv.From || !slices.Contains(spares, mv.To) {
		return hosts, spares, nil, false
	}
	hosts = slices.Clone(hosts)
	hosts[m] = mv.To
	spares = slices.DeleteFunc(slices.Clone(spares), func(h string) bool { return h == mv.To })
	if Mutant == "move-without-replace" {
		return hosts, spares, nil, true
	}
	reqs := []msg.Replace{{Role: erasure.RoleData, Machine: m, Inc: cfg.Data[m]},
		{Role: erasure.RoleParity, Machine: m, Inc: cfg.Parity[m]}}
	if cfg.Layout.W > 0 {
		reqs = append(reqs, msg.Replace{Role: erasure.RoleWitness, Machine: m, Inc: cfg.Witness[m]})
	}
	return hosts, spares, reqs, true
}

// Clone implements node.Node.
func (f *Failover) Clone() node.Node {
	c := *f
	c.hosts, c.spares = slices.Clone(f.hosts), slices.Clone(f.spares)
	c.heard, c.fresh, c.moves, c.asked = maps.Clone(f.heard), maps.Clone(f.fresh), maps.Clone(f.moves), maps.Clone(f.asked)
	return &c
}

// Hash implements node.Node.
func (f *Failover) Hash() uint64 {
	h := node.NewHasher()
	h.Uint64(f.term)
	h.Uint64(f.version)
	node.HashStrings(h, f.hosts)
	node.HashStrings(h, f.spares)
	for _, k := range slices.Sorted(maps.Keys(f.heard)) {
		h.String(k)
		h.Int(f.heard[k])
		h.Bool(f.fresh[k])
	}
	h.Int(f.grace)
	h.Int(f.since)
	for _, m := range slices.Sorted(maps.Keys(f.moves)) {
		mv := f.moves[m]
		h.Int(m)
		h.String(mv.From)
		h.String(mv.To)
		h.Int(mv.At)
	}
	for _, k := range slices.Sorted(maps.Keys(f.asked)) {
		h.String(k)
		h.Int(f.asked[k])
	}
	return h.Sum()
}
