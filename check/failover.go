package check

import (
	"fmt"
	"github.com/amalgam-store/amalgam/mc"
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/reconfig"
)

// Failover scenarios: the reconfiguration leader's failure detector
// (reconfig.Failover, the production code) with machines and spares that
// send it heartbeats on their own timers, a model of the service's log
// (it applies slot moves with reconfig.ApplyMove and the replacements they
// ask for), and a fault node whose one-shot timers pause the detector
// (Resumed: it resumes with stale silence counts) or change the leader
// (Lead: a fresh detector while the old one's moves are still in flight).
// Machines a and b (slots 0 and 1) may crash; s and t are spares.
//
// Liveness is checked as a bounded property of every reachable state:
// from it, once faults stop, a fair schedule (every message delivered
// before the next timer fires, timers of the detector and the machines in
// turn) heals within LivenessBound events when there are enough live spares:
// every slot is served by a live host that had its servers replaced.

// Model timings: rounds and heartbeats are one tick; what matters is the
// count of rounds.
var foModel = reconfig.FailoverConfig{Round: time.Millisecond, Suspect: 2, Grace: 1, Retry: 3}

// LivenessBound bounds the fair schedule's events to heal.
const LivenessBound = 150

var (
	foSlots  = []string{"a", "b", "c"}
	foSpares = []string{"s", "t"}
)

const (
	foLog    = reconfig.LogAddr
	foFaults = node.Addr("faults")
)

func hostAddr(h string) node.Addr { return node.Addr("host/" + h) }

var (
	// FailoverOne crashes one machine, with a pause and a leader change
	// at moments the search chooses.
	FailoverOne = &mc.Scenario{
		System: "amalgam",
		Name:   "failover-one",
		Doc: "failure detector, log model, machines a b c, spares s t; a may crash; one pause (Resumed) and one leader change " +
			"at any moment; up to 14 timer firings per path; heals within the liveness bound",
		Settings:   mc.Settings{MaxTimerFires: 14, MaxCrashes: 1, CrashTargets: []node.Addr{hostAddr("a")}},
		MaxDepth:   40,
		Init:       func() *mc.State { return failoverInit(true, true) },
		Invariants: failoverPredicates,
	}

	// FailoverTwo crashes two machines at once: they must get distinct spares.
	FailoverTwo = &mc.Scenario{
		System: "amalgam",
		Name:   "failover-two",
		Doc: "failure detector, log model, machines a b c, spares s t; a and b may crash; one leader change at any moment; " +
			"up to 14 timer firings per path; distinct spares, heals within the liveness bound",
		Settings:   mc.Settings{MaxTimerFires: 14, MaxCrashes: 2, CrashTargets: []node.Addr{hostAddr("a"), hostAddr("b")}},
		MaxDepth:   40,
		Init:       func() *mc.State { return failoverInit(false, true) },
		Invariants: failoverPredicates,
	}
)

func failoverInit(pause, lead bool) *mc.State {
	nodes := map[node.Addr]node.Node{
		reconfig.FailoverAddr: reconfig.NewFailover(foModel),
		foLog:                 newLogModel(),
		foFaults:              &faultModel{Pause: pause, Lead: lead},
	}
	for m, h := range foSlots {
		nodes[hostAddr(h)] = &hostModel{Host: h, Machine: m}
	}
	for _, h := range foSpares {
		nodes[hostAddr(h)] = &hostModel{Host: h, Machine: -1}
	}
	return mc.NewState(nodes)
}

// hostModel is a machine or a spare: a heartbeat every tick.
type hostModel struct {
	Host    string
	Machine int
}

type beat struct{}

func (beat) Hash(h *node.Hasher) { h.Tag(node.TagFailoverBeat) }

func (n *hostModel) Init(ctx node.Context)                        { ctx.SetTimer(beat{}, time.Millisecond, time.Millisecond) }
func (n *hostModel) Handle(node.Context, node.Addr, node.Message) {}
func (n *hostModel) Timer(ctx node.Context, _ node.Timer) {
	ctx.Send(reconfig.FailoverAddr, reconfig.Heartbeat{Host: n.Host, Machine: n.Machine})
	ctx.SetTimer(beat{}, time.Millisecond, time.Millisecond)
}
func (n *hostModel) Clone() node.Node { c := *n; return &c }
func (n *hostModel) Hash() uint64 {
	h := node.NewHasher()
	h.String(n.Host)
	return h.Sum()
}

// logModel stands for the Raft-replicated service: it applies what the
// detector proposes, in the order it arrives, and shows it the result.
type logModel struct {
	Hosts, Spares []string
	Cfg           msg.Config
	Stranded      []bool // slot moved, its servers not asked to be replaced
	Term          uint64
	Version       uint64
}

var foLayout = erasure.Layout{N: 3, G: 2, F: 1, Stripes: 1, BlockSize: 8}

func newLogModel() *logModel {
	return &logModel{Hosts: slices.Clone(foSlots), Spares: slices.Clone(foSpares), Cfg: msg.InitialConfig(foLayout),
		Stranded: make([]bool, len(foSlots)), Term: 1}
}

func (n *logModel) view() reconfig.View {
	return reconfig.View{Version: n.Version, Hosts: n.Hosts, Spares: n.Spares}
}

func (n *logModel) Init(ctx node.Context) {
	ctx.Send(reconfig.FailoverAddr, reconfig.Lead{Term: n.Term})
	ctx.Send(reconfig.FailoverAddr, n.view())
}

type newLeader struct{}

func (newLeader) Hash(h *node.Hasher) { h.Tag(node.TagFailoverLeader) }

func (n *logModel) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	switch m := m.(type) {
	case reconfig.Move:
		hosts, spares, reqs, ok := reconfig.ApplyMove(n.Hosts, n.Spares, n.Cfg, m)
		if !ok {
			return
		}
		n.Version++
		n.Hosts, n.Spares = hosts, spares
		n.Stranded = slices.Clone(n.Stranded)
		n.Stranded[m.Machine] = len(reqs) == 0
		n.Cfg = n.Cfg.Clone()
		for _, q := range reqs { // the service replaces them (recovery scenarios check how)
			switch q.Role {
			case erasure.RoleData:
				n.Cfg.Data[q.Machine]++
			case erasure.RoleParity:
				n.Cfg.Parity[q.Machine]++
			}
		}
		ctx.Send(reconfig.FailoverAddr, n.view())
	case reconfig.Register:
		if !slices.Contains(n.Hosts, m.Host) && !slices.Contains(n.Spares, m.Host) {
			n.Version++
			n.Spares = append(slices.Clone(n.Spares), m.Host)
			ctx.Send(reconfig.FailoverAddr, n.view())
		}
	case newLeader:
		n.Term++
		ctx.Send(reconfig.FailoverAddr, reconfig.Lead{Term: n.Term})
		ctx.Send(reconfig.FailoverAddr, n.view())
	}
}
func (n *logModel) Timer(node.Context, node.Timer) {}
func (n *logModel) Clone() node.Node {
	c := *n
	return &c // slices are replaced, never changed in place
}
func (n *logModel) Hash() uint64 {
	h := node.NewHasher()
	hashStrs(h, n.Hosts)
	hashStrs(h, n.Spares)
	msg.NewConfig{Config: n.Cfg}.Hash(h)
	for _, b := range n.Stranded {
		h.Bool(b)
	}
	h.Uint64(n.Term)
	h.Uint64(n.Version)
	return h.Sum()
}

func hashStrs(h *node.Hasher, ss []string) {
	h.Int(len(ss))
	for _, s := range ss {
		h.String(s)
	}
}

// faultModel's one-shot timers pause the detector and change the leader.
type faultModel struct{ Pause, Lead bool }

type faultTimer struct{ Kind int }

func (t faultTimer) Hash(h *node.Hasher) { h.Tag(node.TagFailoverFault); h.Int(t.Kind) }

func (n *faultModel) Init(ctx node.Context) {
	if n.Pause {
		ctx.SetTimer(faultTimer{0}, time.Millisecond, 50*time.Millisecond)
	}
	if n.Lead {
		ctx.SetTimer(faultTimer{1}, time.Millisecond, 50*time.Millisecond)
	}
}
func (n *faultModel) Handle(node.Context, node.Addr, node.Message) {}
func (n *faultModel) Timer(ctx node.Context, t node.Timer) {
	if t.(faultTimer).Kind == 0 {
		n.Pause = false
		ctx.Send(reconfig.FailoverAddr, reconfig.Resumed{Rounds: 10})
		return
	}
	n.Lead = false
	ctx.Send(foLog, newLeader{})
}
func (n *faultModel) Clone() node.Node { c := *n; return &c }
func (n *faultModel) Hash() uint64 {
	h := node.NewHasher()
	h.Bool(n.Pause)
	h.Bool(n.Lead)
	return h.Sum()
}

func failoverPredicates() []mc.Predicate {
	return []mc.Predicate{DistinctSpares(), GraceRespected(), HealsWithin(LivenessBound)}
}

// DistinctSpares: no two moves one leadership proposed that could still
// apply name the same spare.
func DistinctSpares() mc.Predicate {
	return mc.Pred("distinct spares", func(s *mc.State) (bool, string) {
		lg := s.Node(foLog).(*logModel)
		var live []reconfig.Move
		for _, e := range s.Network() {
			mv, ok := e.Msg.(reconfig.Move)
			if !ok || mv.Machine >= len(lg.Hosts) || lg.Hosts[mv.Machine] != mv.From || !slices.Contains(lg.Spares, mv.To) {
				continue
			}
			for _, o := range live {
				if o.Term == mv.Term && o.To == mv.To && o.Machine != mv.Machine {
					return false, fmt.Sprintf("slots %d and %d both moved to spare %s in term %d", o.Machine, mv.Machine, mv.To, mv.Term)
				}
			}
			live = append(live, mv)
		}
		return true, "moves in flight name distinct spares"
	})
}

// GraceRespected: no move is decided before the detector ran its grace
// rounds and then Suspect silent rounds since it started leading or
// resumed (silence counted before is stale).
func GraceRespected() mc.Predicate {
	return mc.Pred("grace respected", func(s *mc.State) (bool, string) {
		for _, e := range s.Network() {
			if mv, ok := e.Msg.(reconfig.Move); ok && mv.Since < foModel.Grace+foModel.Suspect {
				return false, fmt.Sprintf("slot %d moved to %s %d rounds after a leader change or resume", mv.Machine, mv.To, mv.Since)
			}
		}
		return true, "no move inside a grace window"
	})
}

// HealsWithin: once faults stop and enough spares are live, the fair
// schedule from the state heals within k events, unless false suspicions
// (live machines silent in the state's past) used up the spares.
func HealsWithin(k int) mc.Predicate {
	return mc.Pred(fmt.Sprintf("heals within %d events", k), func(s *mc.State) (bool, string) {
		if !enoughSpares(s) {
			return true, "not enough live spares"
		}
		cur, last := s, -1
		for i := 0; i < k; i++ {
			if ok, _ := healthy(cur); ok {
				return true, fmt.Sprintf("healthy after %d fair events", i)
			}
			var next *mc.Event
			evs := cur.Events(mc.Settings{MaxTimerFires: mc.Unlimited})
			for j := range evs {
				if evs[j].Kind == mc.Deliver {
					next = &evs[j]
					break
				}
			}
			if next == nil {
				next, last = nextInTurn(cur, evs, last)
				if next == nil {
					break
				}
			}
			n, err := cur.Apply(*next)
			if err != nil {
				return false, fmt.Sprintf("fair schedule: %v", err)
			}
			cur = n
		}
		if !enoughSpares(cur) {
			return true, "false suspicions used up the live spares"
		}
		_, why := healthy(cur)
		return false, fmt.Sprintf("not healed after %d fair events: %s", k, why)
	})
}

// nextInTurn is the timer of the first node after last (an index in
// s.Addrs) that has one ready, wrapping around; the fault node's never.
func nextInTurn(s *mc.State, evs []mc.Event, last int) (*mc.Event, int) {
	var first, after *mc.Event
	fi, ai := 0, 0
	for j := range evs {
		if evs[j].Kind != mc.Fire || evs[j].Node == foFaults {
			continue
		}
		i := slices.Index(s.Addrs(), evs[j].Node)
		if first == nil || i < fi {
			first, fi = &evs[j], i
		}
		if i > last && (after == nil || i < ai) {
			after, ai = &evs[j], i
		}
	}
	if after != nil {
		return after, ai
	}
	return first, fi
}

func enoughSpares(s *mc.State) bool {
	lg := s.Node(foLog).(*logModel)
	down, spare := 0, 0
	for _, h := range lg.Hosts {
		if s.Crashed(hostAddr(h)) {
			down++
		}
	}
	for _, h := range lg.Spares {
		if !s.Crashed(hostAddr(h)) {
			spare++
		}
	}
	return spare >= down
}

func healthy(s *mc.State) (bool, string) {
	lg := s.Node(foLog).(*logModel)
	for m, h := range lg.Hosts {
		if s.Crashed(hostAddr(h)) {
			return false, fmt.Sprintf("slot %d is on the crashed host %s", m, h)
		}
		if lg.Stranded[m] {
			return false, fmt.Sprintf("slot %d moved to %s, its servers never replaced", m, h)
		}
	}
	return true, "every slot on a live host with its servers"
}
