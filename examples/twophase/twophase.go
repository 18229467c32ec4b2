// Package twophase is two-phase commit written as node.Node values and
// checked with mc, as an example of the engine's public API: a
// transaction manager ("tm") and resource managers ("rm/0", "rm/1", ...)
// after Lamport's TLA+ TwoPhase specification. A resource manager may
// prepare or abort on its own, the manager may abort on its own, and it
// commits once every resource manager has prepared. Spontaneous steps
// are timers, so the checker explores every moment they can happen.
package twophase

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
)

// TMAddr is the transaction manager's address.
const TMAddr node.Addr = "tm"

// RMAddr is the address of resource manager i.
func RMAddr(i int) node.Addr { return node.Addr(fmt.Sprintf("rm/%d", i)) }

// The messages: an RM tells the TM it prepared; the TM tells every RM
// the outcome.
type (
	Prepared struct{ RM int }
	Commit   struct{}
	Abort    struct{}
)

// The hash type tags of the messages and the timer. A protocol's tags
// need only differ from each other: no checker run mixes two protocols.
const (
	tagPrepared node.Tag = iota + 1
	tagCommit
	tagAbort
	tagDecide
)

// Hash implements node.Message.
func (m Prepared) Hash(h *node.Hasher) { h.Tag(tagPrepared); h.Int(m.RM) }

// PermutedHash implements mc.Permutable.
func (m Prepared) PermutedHash(p func(node.Addr) node.Addr) uint64 {
	return node.HashOf(Prepared{RM: renamed(p, m.RM)})
}

// renamed is RM i's number after the renaming p.
func renamed(p func(node.Addr) node.Addr, i int) int {
	var j int
	fmt.Sscanf(string(p(RMAddr(i))), "rm/%d", &j)
	return j
}

// Hash implements node.Message.
func (Commit) Hash(h *node.Hasher) { h.Tag(tagCommit) }

// Hash implements node.Message.
func (Abort) Hash(h *node.Hasher) { h.Tag(tagAbort) }

// decide is a timer: the RM prepares (Prepare) or aborts on its own, or
// the TM aborts on its own.
type decide struct{ Prepare bool }

// Hash implements node.Timer.
func (t decide) Hash(h *node.Hasher) { h.Tag(tagDecide); h.Bool(t.Prepare) }

// String describes the timer in traces.
func (t decide) String() string {
	if t.Prepare {
		return "prepare"
	}
	return "abort"
}

func setTimer(ctx node.Context, t decide) { ctx.SetTimer(t, time.Millisecond, 2*time.Millisecond) }

// The states of an RM and of the TM.
type State uint8

const (
	Working State = iota // RM: initial; TM: init
	Prepare              // RM only
	Committed
	Aborted
)

func (s State) String() string { return [...]string{"working", "prepared", "committed", "aborted"}[s] }

// RM is a resource manager.
type RM struct {
	ID    int
	State State
	// SelfSteps: spontaneous steps are messages to itself (see
	// StaterightScenario), not timers.
	SelfSteps bool
}

// Init implements node.Node: the RM may prepare or abort on its own.
func (r *RM) Init(ctx node.Context) {
	spontaneous(ctx, r.SelfSteps, decide{Prepare: true})
	spontaneous(ctx, r.SelfSteps, decide{Prepare: false})
}

// spontaneous offers the step d: a timer, or with selfSteps a message to
// itself.
func spontaneous(ctx node.Context, selfSteps bool, d decide) {
	if selfSteps {
		ctx.Send(ctx.Self(), d)
	} else {
		setTimer(ctx, d)
	}
}

// Timer implements node.Node.
func (r *RM) Timer(ctx node.Context, t node.Timer) {
	if r.State != Working {
		return
	}
	if t.(decide).Prepare {
		r.State = Prepare
		ctx.Send(TMAddr, Prepared{RM: r.ID})
	} else {
		r.State = Aborted
	}
}

// Handle implements node.Node.
func (r *RM) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	switch m.(type) {
	case decide:
		r.Timer(ctx, m)
	case Commit:
		r.State = Committed
	case Abort:
		r.State = Aborted
	}
}

// Clone implements node.Node.
func (r *RM) Clone() node.Node { c := *r; return &c }

// Hash implements node.Node.
func (r *RM) Hash() uint64 { return r.hash(r.ID) }

func (r *RM) hash(id int) uint64 {
	h := node.NewHasher()
	h.Int(id)
	h.Uint64(uint64(r.State))
	return h.Sum()
}

// PermutedHash implements mc.Permutable.
func (r *RM) PermutedHash(p func(node.Addr) node.Addr) uint64 { return r.hash(renamed(p, r.ID)) }

// Describe implements node.Describer.
func (r *RM) Describe() string { return r.State.String() }

// TM is the transaction manager.
type TM struct {
	RMs      int
	State    State
	Prepared []bool // by RM
	// CommitEarly is an injected bug: the TM commits once all but one
	// RM have prepared.
	CommitEarly bool
	// SelfSteps: the TM aborts on a message to itself, not a timer, and
	// commits in a step of its own (a message decide{Prepare: true} to
	// itself) once every RM prepared, not on the last Prepared.
	SelfSteps bool
}

// Init implements node.Node: the TM may abort on its own.
func (t *TM) Init(ctx node.Context) {
	spontaneous(ctx, t.SelfSteps, decide{Prepare: false})
	if t.SelfSteps {
		ctx.Send(ctx.Self(), decide{Prepare: true})
	}
}

// Timer implements node.Node.
func (t *TM) Timer(ctx node.Context, _ node.Timer) {
	if t.State == Working {
		t.State = Aborted
		t.tell(ctx, Abort{})
	}
}

// Handle implements node.Node.
func (t *TM) Handle(ctx node.Context, _ node.Addr, m node.Message) {
	if d, ok := m.(decide); ok {
		if !d.Prepare {
			t.Timer(ctx, d)
		} else if t.State == Working {
			t.commitIf(ctx)
		}
		return
	}
	p, ok := m.(Prepared)
	if !ok || t.State != Working || t.Prepared[p.RM] {
		return
	}
	t.Prepared = slices.Clone(t.Prepared)
	t.Prepared[p.RM] = true
	if !t.SelfSteps {
		t.commitIf(ctx)
	}
}

// commitIf commits once enough RMs prepared.
func (t *TM) commitIf(ctx node.Context) {
	need := t.RMs
	if t.CommitEarly {
		need--
	}
	n := 0
	for _, ok := range t.Prepared {
		if ok {
			n++
		}
	}
	if n >= need {
		t.State = Committed
		t.tell(ctx, Commit{})
	}
}

func (t *TM) tell(ctx node.Context, m node.Message) {
	for i := 0; i < t.RMs; i++ {
		ctx.Send(RMAddr(i), m)
	}
}

// Clone implements node.Node. Prepared is copied before it changes.
func (t *TM) Clone() node.Node { c := *t; return &c }

// Hash implements node.Node.
func (t *TM) Hash() uint64 { return t.hash(t.Prepared) }

func (t *TM) hash(prepared []bool) uint64 {
	h := node.NewHasher()
	h.Uint64(uint64(t.State))
	for _, p := range prepared {
		h.Bool(p)
	}
	return h.Sum()
}

// PermutedHash implements mc.Permutable.
func (t *TM) PermutedHash(p func(node.Addr) node.Addr) uint64 {
	prepared := make([]bool, len(t.Prepared))
	for i, ok := range t.Prepared {
		prepared[renamed(p, i)] = ok
	}
	return t.hash(prepared)
}

// symmetric declares the RMs interchangeable (mc.Options.Symmetry),
// sorted by their state as Stateright's 2pc.rs representative sorts them.
func symmetric(s *mc.State, rms int) {
	var g []node.Addr
	for i := 0; i < rms; i++ {
		g = append(g, RMAddr(i))
	}
	s.Symmetric([][]node.Addr{g}, func(n node.Node) uint64 { return uint64(n.(*RM).State) })
}

// Describe implements node.Describer.
func (t *TM) Describe() string {
	var ps []string
	for i, p := range t.Prepared {
		if p {
			ps = append(ps, fmt.Sprint(i))
		}
	}
	return fmt.Sprintf("%s, prepared [%s]", t.State, strings.Join(ps, " "))
}

// Nodes builds a TM and rms resource managers.
func Nodes(rms int, commitEarly bool) map[node.Addr]node.Node {
	nodes := map[node.Addr]node.Node{TMAddr: &TM{RMs: rms, Prepared: make([]bool, rms), CommitEarly: commitEarly}}
	for i := 0; i < rms; i++ {
		nodes[RMAddr(i)] = &RM{ID: i}
	}
	return nodes
}

// Consistent is the safety property: no RM has committed while another
// has aborted.
func Consistent() mc.Predicate {
	return mc.Pred("no RM committed while another aborted", func(s *mc.State) (bool, string) {
		var committed, aborted []string
		for i, a := range s.Addrs() {
			if r, ok := s.NodeAt(i).(*RM); ok {
				switch r.State {
				case Committed:
					committed = append(committed, string(a))
				case Aborted:
					aborted = append(aborted, string(a))
				}
			}
		}
		if len(committed) > 0 && len(aborted) > 0 {
			return false, fmt.Sprintf("%v committed, %v aborted", committed, aborted)
		}
		return true, "all RMs that decided agree"
	}).Projected(mc.Projection{ // the RMs' states only, for mc's LMC
		Reads: func(_ node.Addr, n node.Node) bool { _, ok := n.(*RM); return ok },
		Key:   func(n node.Node) uint64 { return uint64(n.(*RM).State) },
	})
}

// Scenario is two-phase commit with rms resource managers: every timer
// may fire (each RM's and the TM's spontaneous steps), no message is lost.
func Scenario(rms int, commitEarly bool) *mc.Scenario {
	return &mc.Scenario{
		Name:   fmt.Sprintf("2pc-%d", rms),
		Doc:    fmt.Sprintf("two-phase commit, %d resource managers", rms),
		System: "twophase",
		Init: func() *mc.State {
			s := mc.NewState(Nodes(rms, commitEarly))
			symmetric(s, rms)
			return s
		},
		Invariants: func() []mc.Predicate { return []mc.Predicate{Consistent()} },
		Settings:   mc.Settings{MaxTimerFires: mc.Unlimited},
	}
}

// StaterightScenario is two-phase commit as Stateright's examples/2pc.rs
// states it: the state is the RMs', the TM's and the set of messages
// sent (mc.State.KeepDelivered: delivery does not consume a message, so
// Prepared and the outcome stay readable), every spontaneous step (an
// RM preparing or aborting, the TM aborting or committing once all
// prepared) is a message a node sent itself at Init, and there are no
// timers. Its state counts are Stateright's: 288 with 3 RMs, 8,832 with 5.
func StaterightScenario(rms int, commitEarly bool) *mc.Scenario {
	sc := Scenario(rms, commitEarly)
	sc.Name = fmt.Sprintf("2pc-stateright-%d", rms)
	sc.Doc = fmt.Sprintf("two-phase commit as Stateright's 2pc.rs, %d resource managers", rms)
	sc.Settings = mc.Settings{SkipNoOps: true}
	sc.Init = func() *mc.State {
		nodes := Nodes(rms, commitEarly)
		for _, n := range nodes {
			switch n := n.(type) {
			case *TM:
				n.SelfSteps = true
			case *RM:
				n.SelfSteps = true
			}
		}
		s := mc.NewState(nodes)
		s.KeepDelivered()
		symmetric(s, rms)
		return s
	}
	return sc
}
