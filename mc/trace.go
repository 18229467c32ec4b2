package mc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/amalgam-store/amalgam/node"
)

// TraceVersion is the version of the trace file format.
const TraceVersion = 1

// TraceFile is a saved counterexample: the scenario it belongs to, the
// violation, and the events from the scenario's initial state. Events name
// messages by envelope hash (sender, receiver and content) and timers by
// their hash, so a trace replays exactly on the same protocol code.
type TraceFile struct {
	Version  int    `json:"version"`
	Scenario string `json:"scenario"`
	// Initial is the fingerprint of the scenario's initial state (hex):
	// replay refuses a trace recorded from another initial state (another
	// scenario's trace with its name changed, or a changed scenario).
	// Files without it are replayed without this check.
	Initial     string       `json:"initial,omitempty"`
	Predicate   string       `json:"predicate"`
	Explanation string       `json:"explanation"`
	Events      []TraceEvent `json:"events"`
}

// TraceEvent is one event of a saved trace.
type TraceEvent struct {
	Kind  string `json:"kind"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
	Msg   string `json:"msg,omitempty"` // envelope hash, hex
	Node  string `json:"node,omitempty"`
	Timer string `json:"timer,omitempty"` // timer hash, hex
	Desc  string `json:"desc"`            // human-readable; ignored on load
	// Sent lists what the event's handler sent (Sent.Lines); ignored on load.
	Sent []string `json:"sent,omitempty"`
}

func encodeEvent(e Event) TraceEvent {
	te := TraceEvent{Kind: e.Kind.String(), Desc: e.String()}
	switch e.Kind {
	case Fire:
		te.Node, te.Timer = string(e.Node), strconv.FormatUint(e.Timer, 16)
	case Crash:
		te.Node = string(e.Node)
		if len(e.Handled) > 0 { // a crash after handling stream messages (SendsBeforeDurableOn)
			te.From, te.To, te.Msg = string(e.Env.From), string(e.Env.To), strconv.FormatUint(e.earlyKey(), 16)
		}
	case Restart, Heal, Sync:
		te.Node = string(e.Node)
	case Partition:
		te.Node, te.Timer = string(e.Node), strconv.FormatUint(e.Timer, 16)
	default:
		te.From, te.To, te.Msg = string(e.Env.From), string(e.Env.To), strconv.FormatUint(e.Env.hash, 16)
	}
	return te
}

// resolve finds the event te names among the events possible in s.
func (te TraceEvent) resolve(s *State) (Event, error) {
	k, err := ParseEventKind(te.Kind)
	if err != nil {
		return Event{}, err
	}
	var h uint64
	switch k {
	case Fire, Partition:
		h, err = strconv.ParseUint(te.Timer, 16, 64)
	case Restart, Heal, Sync:
	case Crash:
		if te.Msg != "" {
			h, err = strconv.ParseUint(te.Msg, 16, 64)
		}
	default:
		h, err = strconv.ParseUint(te.Msg, 16, 64)
	}
	if err != nil {
		return Event{}, fmt.Errorf("bad hash in %q: %v", te.Desc, err)
	}
	if k == Partition {
		if _, ok := s.sys.index[node.Addr(te.Node)]; ok && s.cut == 0 && h > 0 {
			return Event{Kind: Partition, Node: node.Addr(te.Node), Timer: h}, nil
		}
		return Event{}, fmt.Errorf("event partition %s (%q) is not possible here", te.Node, te.Desc)
	}
	all := s.Events(Settings{MaxDrops: Unlimited, MaxDuplicates: Unlimited, MaxCrashes: Unlimited,
		MaxTimerFires: Unlimited, MaxRestarts: Unlimited, CrashTargets: s.sys.addrs})
	for _, e := range all {
		if e.Kind != k {
			continue
		}
		switch k {
		case Fire:
			if string(e.Node) == te.Node && e.Timer == h {
				return e, nil
			}
		case Crash:
			if string(e.Node) == te.Node && e.earlyKey() == h {
				return e, nil
			}
		case Restart, Heal, Sync:
			if string(e.Node) == te.Node {
				return e, nil
			}
		default:
			if e.Env.hash == h && string(e.Env.From) == te.From && string(e.Env.To) == te.To {
				return e, nil
			}
		}
	}
	return Event{}, fmt.Errorf("event %s %s->%s msg %s node %s timer %s (%q) is not possible here",
		te.Kind, te.From, te.To, te.Msg, te.Node, te.Timer, te.Desc)
}

// NewTraceFile packages a search result of scenario sc.
func NewTraceFile(sc *Scenario, r *Result) *TraceFile {
	tf := &TraceFile{Version: TraceVersion, Scenario: sc.Name, Initial: strconv.FormatUint(sc.Init().Fingerprint(), 16),
		Predicate: r.Predicate, Explanation: r.Explanation}
	s := sc.Init()
	for _, e := range r.Trace {
		te := encodeEvent(e)
		if s != nil {
			next, sent, err := s.ApplySent(e)
			te.Sent = sent.Lines()
			if err != nil {
				next = nil
			}
			s = next
		}
		tf.Events = append(tf.Events, te)
	}
	return tf
}

// Save writes the trace as JSON.
func (tf *TraceFile) Save(path string) error {
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// LoadTrace reads a trace file, refusing other versions and malformed files.
func LoadTrace(path string) (*TraceFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTrace(b)
}

// ParseTrace decodes a trace file's contents.
func ParseTrace(b []byte) (*TraceFile, error) {
	var tf TraceFile
	if err := json.Unmarshal(b, &tf); err != nil {
		return nil, fmt.Errorf("not a trace file (corrupted JSON: %v)", err)
	}
	if tf.Version != TraceVersion {
		return nil, fmt.Errorf("trace file version %d, this checker reads version %d", tf.Version, TraceVersion)
	}
	if tf.Scenario == "" {
		return nil, errors.New("trace file names no scenario")
	}
	return &tf, nil
}

// Replayed is the outcome of replaying a trace.
type Replayed struct {
	Events      []Event
	Final       *State
	Predicate   string // the invariant that fails at the end ("" if none)
	Explanation string
}

// Replay runs tf on scenario sc from its initial state and checks the
// scenario's invariants at every step, stopping at the first violation.
// It refuses a trace of another scenario and one whose events do not
// apply (a corrupted file, or changed protocol code).
func Replay(sc *Scenario, tf *TraceFile) (*Replayed, error) {
	if tf.Scenario != sc.Name {
		return nil, fmt.Errorf("trace is for scenario %q, not %q", tf.Scenario, sc.Name)
	}
	s := sc.Init()
	if tf.Initial != "" && tf.Initial != strconv.FormatUint(s.Fingerprint(), 16) {
		return nil, fmt.Errorf("trace was recorded from another initial state than scenario %q's (a trace of another scenario, or the scenario or the protocol changed)", sc.Name)
	}
	inv := sc.Options(BFS).Invariants
	out := &Replayed{Final: s}
	check := func(s *State) bool {
		for _, p := range inv {
			if ok, why := p.Check(s); !ok {
				out.Predicate, out.Explanation = p.Name, why
				return true
			}
		}
		return false
	}
	if check(s) {
		return out, nil
	}
	for i, te := range tf.Events {
		e, err := te.resolve(s)
		if err != nil {
			return nil, fmt.Errorf("trace of scenario %q does not replay at step %d: %v", sc.Name, i+1, err)
		}
		next, err := s.Apply(e)
		out.Events = append(out.Events, e)
		var hp *HandlerPanic
		if errors.As(err, &hp) {
			out.Final, out.Predicate, out.Explanation = next, HandlerPanicPredicate, hp.Error()
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("step %d: %v", i+1, err)
		}
		s = next
		out.Final = s
		if check(s) {
			return out, nil
		}
	}
	return out, nil
}

// violates replays events strictly from init and reports whether invariant
// pred fails (or the handler panics, for HandlerPanicPredicate) by the end.
func violates(init *State, events []Event, inv []Predicate, pred string) bool {
	var p *Predicate
	for i := range inv {
		if inv[i].Name == pred {
			p = &inv[i]
		}
	}
	s := init
	for _, e := range events {
		next, err := s.Apply(e)
		if err != nil {
			var hp *HandlerPanic
			return errors.As(err, &hp) && pred == HandlerPanicPredicate
		}
		s = next
		if p != nil {
			if ok, _ := p.Check(s); !ok {
				return true
			}
		}
	}
	return false
}

// Minimize removes events from a violating trace, one at a time from the
// end, keeping each removal after which the same invariant still fails.
func Minimize(init *State, events []Event, inv []Predicate, pred string) []Event {
	cur := append([]Event(nil), events...)
	for i := len(cur) - 1; i >= 0; i-- {
		try := append(append([]Event(nil), cur[:i]...), cur[i+1:]...)
		if violates(init, try, inv, pred) {
			cur = try
		}
	}
	return cur
}

// Reorder puts a trace in a readable order (thesis 4.3.4.2): it builds the
// happens-before graph (an event follows the event that sent its message
// and the previous event at the same node) and emits a depth-first
// topological order that follows each event with its consequences. If the
// reordered trace does not reach the same violation it returns events.
func Reorder(init *State, events []Event, inv []Predicate, pred string) []Event {
	n := len(events)
	sender := map[uint64]int{} // envelope hash -> latest event that sent it
	deps := make([][]int, n)
	lastAt := map[node.Addr]int{}
	s := init
	for i, e := range events {
		if !e.Kind.OfNode() {
			if j, ok := sender[e.Env.hash]; ok {
				deps[i] = append(deps[i], j)
			}
		}
		at := e.Target()
		if e.Kind == Drop {
			at = ""
		}
		if j, ok := lastAt[at]; ok && at != "" {
			deps[i] = append(deps[i], j)
		}
		if at != "" {
			lastAt[at] = i
		}
		next, err := s.Apply(e)
		if err != nil {
			return events
		}
		for _, x := range next.net {
			if !containsEnv(s.net, x.hash) || countEnv(next.net, x.hash) > countEnv(s.net, x.hash) {
				sender[x.hash] = i
			}
		}
		next.StreamMessages(func(x Envelope) {
			if _, ok := sender[x.hash]; !ok {
				sender[x.hash] = i
			}
		})
		s = next
	}
	succ := make([][]int, n)
	indeg := make([]int, n)
	for i, ds := range deps {
		for _, j := range ds {
			succ[j] = append(succ[j], i)
			indeg[i]++
		}
	}
	var out []int
	done := make([]bool, n)
	var visit func(i int)
	visit = func(i int) {
		done[i] = true
		out = append(out, i)
		for _, j := range succ[i] {
			if indeg[j]--; indeg[j] == 0 && !done[j] {
				visit(j)
			}
		}
	}
	for i := 0; i < n; i++ {
		if !done[i] && indeg[i] == 0 {
			visit(i)
		}
	}
	if len(out) != n {
		return events
	}
	re := make([]Event, n)
	for k, i := range out {
		re[k] = events[i]
	}
	if !violates(init, re, inv, pred) {
		return events
	}
	return re
}

func containsEnv(es []Envelope, h uint64) bool { return countEnv(es, h) > 0 }

func countEnv(es []Envelope, h uint64) int {
	n := 0
	for _, e := range es {
		if e.hash == h {
			n++
		}
	}
	return n
}

// Explain minimizes (MinimizeCausal) and reorders r's trace for scenario
// sc (in place).
func Explain(sc *Scenario, r *Result) {
	if r.Outcome != Violation || len(r.Trace) == 0 {
		return
	}
	inv := sc.Options(BFS).Invariants
	r.Trace = MinimizeCausal(sc.Init(), r.Trace, inv, r.Predicate)
	r.Trace = Reorder(sc.Init(), r.Trace, inv, r.Predicate)
}

// PrintTrace writes a readable step list: each event, the state of the
// node that handled it afterwards, as describe tells it (nil: Describe),
// and what its handler sent, one line each ("-> send ...", "-> stream
// ...", "-> timer ...").
func PrintTrace(w io.Writer, init *State, events []Event, describe func(node.Node) string) {
	if describe == nil {
		describe = func(n node.Node) string { return Describe(n) }
	}
	s := init
	for i, e := range events {
		next, sent, err := s.ApplySent(e)
		fmt.Fprintf(w, "%3d. %v\n", i+1, e)
		if err != nil {
			fmt.Fprintf(w, "     !! %v\n", err)
			return
		}
		if n := next.Node(e.Target()); n != nil && e.Kind != Drop {
			fmt.Fprintf(w, "     %s: %s\n", e.Target(), describe(n))
		}
		for _, l := range sent.Lines() {
			fmt.Fprintf(w, "     -> %s\n", l)
		}
		s = next
	}
}
