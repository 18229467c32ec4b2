package explore

import (
	"fmt"

	"github.com/amalgam-store/amalgam/mc"
)

// view is what the page shows of the current step.
type view struct {
	Scenario   string      `json:"scenario"`
	System     string      `json:"system"`
	Doc        string      `json:"doc"`
	Step       int         `json:"step"`    // id of the current step
	Depth      int         `json:"depth"`   // events from the initial state
	Forward    int         `json:"forward"` // the step "forward" goes to, or -1
	End        int         `json:"end"`     // the last step following forward
	Notice     string      `json:"notice"`
	Path       []pathItem  `json:"path"`
	Sent       []string    `json:"sent"` // what the last event's handler sent
	Nodes      []nodeView  `json:"nodes"`
	Network    []msgView   `json:"network"`
	Streams    []queueView `json:"streams"`
	Timers     []timerView `json:"timers"`
	Cut        string      `json:"cut"`
	Budget     mc.Budget   `json:"budget"`
	Predicates []predView  `json:"predicates"`
	Events     []eventView `json:"events"`
	Tree       []treeItem  `json:"tree"`
}

type pathItem struct {
	Step  int    `json:"step"`
	Desc  string `json:"desc"`
	Kind  string `json:"kind"`
	Pred  string `json:"pred,omitempty"`
	Panic bool   `json:"panic,omitempty"`
}

type nodeView struct {
	Addr    string `json:"addr"`
	Desc    string `json:"desc"`
	Prev    string `json:"prev"` // the description one step back
	Changed bool   `json:"changed"`
	Crashed bool   `json:"crashed"`
}

type msgView struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Desc  string `json:"desc"`
	Count int    `json:"count"`
}

type queueView struct {
	From string   `json:"from"`
	To   string   `json:"to"`
	Msgs []string `json:"msgs"`
}

type timerView struct {
	Node  string `json:"node"`
	Desc  string `json:"desc"`
	Min   string `json:"min"`
	Max   string `json:"max"`
	Ready bool   `json:"ready"`
}

type predView struct {
	Name        string `json:"name"`
	OK          bool   `json:"ok"`
	Explanation string `json:"explanation"`
}

type eventView struct {
	Index  int    `json:"index"`
	Kind   string `json:"kind"`
	Desc   string `json:"desc"`
	Target string `json:"target"`
	Taken  int    `json:"taken"` // the child step it leads to, or -1
}

type treeItem struct {
	Step   int    `json:"step"`
	Parent int    `json:"parent"`
	Depth  int    `json:"depth"`
	Desc   string `json:"desc"`
	Pred   string `json:"pred,omitempty"`
}

func (sv *Server) view() *view {
	t, cur := sv.t, sv.t.cur
	st := cur.st
	v := &view{Scenario: t.sc.Name, System: t.sc.System, Doc: t.sc.Doc, Step: cur.id, Depth: cur.depth,
		Forward: -1, Notice: sv.notice, Sent: cur.sent.Lines(), Budget: st.Used()}
	if cur.next != nil {
		v.Forward = cur.next.id
	}
	end := cur
	for end.next != nil {
		end = end.next
	}
	v.End = end.id
	for _, p := range cur.path() {
		it := pathItem{Step: p.id, Desc: "initial state", Kind: "init", Pred: p.pred, Panic: p.panicked}
		if p.parent != nil {
			it.Desc, it.Kind = p.ev.String(), p.ev.Kind.String()
		}
		v.Path = append(v.Path, it)
	}
	for _, a := range st.Addrs() {
		nv := nodeView{Addr: string(a), Desc: t.sc.DescribeNode(st.Node(a)), Crashed: st.Crashed(a)}
		nv.Prev = nv.Desc
		if cur.parent != nil {
			nv.Prev = t.sc.DescribeNode(cur.parent.st.Node(a))
			nv.Changed = nv.Prev != nv.Desc || cur.parent.st.Crashed(a) != nv.Crashed
		}
		v.Nodes = append(v.Nodes, nv)
		for _, pt := range st.Timers(a) {
			v.Timers = append(v.Timers, timerView{Node: string(a), Desc: mc.Describe(pt.T),
				Min: pt.Min.String(), Max: pt.Max.String(), Ready: pt.Ready})
		}
	}
	seen := map[uint64]int{}
	for _, e := range st.Network() {
		if i, ok := seen[e.Hash()]; ok {
			v.Network[i].Count++
			continue
		}
		seen[e.Hash()] = len(v.Network)
		v.Network = append(v.Network, msgView{From: string(e.From), To: string(e.To), Desc: mc.Describe(e.Msg), Count: 1})
	}
	for _, q := range st.Queues() {
		qv := queueView{From: string(q.From), To: string(q.To)}
		for _, e := range q.Msgs {
			qv.Msgs = append(qv.Msgs, mc.Describe(e.Msg))
		}
		v.Streams = append(v.Streams, qv)
	}
	if a, left := st.Cut(); a != "" {
		v.Cut = fmt.Sprintf("%s is cut off from every other node for %d more events", a, left)
	}
	for _, p := range t.inv {
		ok, why := p.Check(st)
		v.Predicates = append(v.Predicates, predView{Name: p.Name, OK: ok, Explanation: why})
	}
	if cur.panicked {
		v.Predicates = append(v.Predicates, predView{Name: cur.pred, Explanation: cur.why})
	} else {
		taken := map[string]int{}
		for _, c := range cur.children {
			taken[c.key] = c.id
		}
		for i, e := range st.Events(t.sc.Settings) {
			ev := eventView{Index: i, Kind: e.Kind.String(), Desc: e.String(), Target: string(e.Target()), Taken: -1}
			if id, ok := taken[mc.EventKey(e)]; ok {
				ev.Taken = id
			}
			v.Events = append(v.Events, ev)
		}
	}
	for _, s := range t.steps {
		it := treeItem{Step: s.id, Parent: -1, Depth: s.depth, Desc: "initial state", Pred: s.pred}
		if s.parent != nil {
			it.Parent, it.Desc = s.parent.id, s.ev.String()
		}
		v.Tree = append(v.Tree, it)
	}
	return v
}
