// Package explore is the model checker's visual explorer (DSLabs' visual
// debugger, thesis 4.5): a local web page that shows one state of a
// scenario at a time, takes the events the engine enables in it, keeps
// every branch taken in a history tree, loads and saves trace files,
// runs bounded searches from the current state and draws the path as a
// message-sequence chart. The page's assets are embedded.
package explore

import (
	"errors"
	"fmt"

	"github.com/amalgam-store/amalgam/mc"
)

// step is one node of the history tree: a state and the event that led
// to it from its parent (none for the root).
type step struct {
	id       int
	parent   *step
	children []*step
	next     *step // the child "forward" follows: the last one visited
	depth    int
	ev       mc.Event
	key      string // mc.EventKey(ev)
	st       *mc.State
	sent     mc.Sent
	// pred and why are the first invariant that fails in st (in the
	// scenario's order, as mc replay checks), or the handler's panic.
	pred, why string
	panicked  bool
}

// tree is the history tree of one scenario.
type tree struct {
	sc    *mc.Scenario
	inv   []mc.Predicate
	steps []*step // by id
	cur   *step
}

func newTree(sc *mc.Scenario) *tree {
	t := &tree{sc: sc}
	if sc.Invariants != nil {
		t.inv = sc.Invariants()
	}
	root := &step{st: sc.Init()}
	t.check(root)
	t.steps = []*step{root}
	t.cur = root
	return t
}

func (t *tree) root() *step { return t.steps[0] }

// check records the first invariant that fails in s's state.
func (t *tree) check(s *step) {
	for _, p := range t.inv {
		if ok, why := p.Check(s.st); !ok {
			s.pred, s.why = p.Name, why
			return
		}
	}
}

// take applies e at s, or follows the child that took it already.
func (t *tree) take(s *step, e mc.Event) (*step, error) {
	key := mc.EventKey(e)
	for _, c := range s.children {
		if c.key == key {
			s.next = c
			return c, nil
		}
	}
	if s.panicked {
		return nil, errors.New("a handler panicked here: the path ends")
	}
	n, sent, err := s.st.ApplySent(e)
	c := &step{id: len(t.steps), parent: s, depth: s.depth + 1, ev: e, key: key, st: n, sent: sent}
	var hp *mc.HandlerPanic
	switch {
	case errors.As(err, &hp):
		c.panicked, c.pred, c.why = true, mc.HandlerPanicPredicate, hp.Error()
	case err != nil:
		return nil, fmt.Errorf("event %v: %v", e, err)
	default:
		t.check(c)
	}
	t.steps = append(t.steps, c)
	s.children = append(s.children, c)
	s.next = c
	return c, nil
}

// takeAll takes events one after another from s and returns the last step.
func (t *tree) takeAll(s *step, evs []mc.Event) (*step, error) {
	for i, e := range evs {
		n, err := t.take(s, e)
		if err != nil {
			return s, fmt.Errorf("step %d: %v", s.depth+1, err)
		}
		s = n
		if s.panicked && i < len(evs)-1 {
			break
		}
	}
	return s, nil
}

// path lists the steps from the root to s.
func (s *step) path() []*step {
	var out []*step
	for ; s != nil; s = s.parent {
		out = append(out, s)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// traceFile packages the path from the root to s as a trace file that mc
// replay accepts: the violation it names is the first on the path.
func (t *tree) traceFile(s *step) *mc.TraceFile {
	r := &mc.Result{Outcome: mc.Violation}
	for _, p := range s.path() {
		if p.parent != nil {
			r.Trace = append(r.Trace, p.ev)
		}
		if p.pred != "" {
			r.Predicate, r.Explanation = p.pred, p.why
			break
		}
	}
	return mc.NewTraceFile(t.sc, r)
}
