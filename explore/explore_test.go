package explore

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/mc"
)

// client talks to an explorer's API.
type client struct {
	t   *testing.T
	url string
}

func (c client) do(method, path, body string) (*view, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Error string }
	if resp.StatusCode != 200 {
		if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
			c.t.Fatalf("%s %s: status %d: %s", method, path, resp.StatusCode, b)
		}
		return nil, e.Error
	}
	v := &view{}
	if err := json.Unmarshal(b, v); err != nil {
		c.t.Fatalf("%s %s: %v: %s", method, path, err, b)
	}
	return v, ""
}

// take takes the first enabled event whose description starts with desc.
func (c client) take(v *view, desc string) *view {
	c.t.Helper()
	for _, e := range v.Events {
		if strings.HasPrefix(e.Desc, desc) {
			n, msg := c.do("POST", "/api/step", `{"step":`+itoa(v.Step)+`,"event":`+itoa(e.Index)+`}`)
			if msg != "" {
				c.t.Fatal(msg)
			}
			return n
		}
	}
	c.t.Fatalf("no enabled event %q at step %d", desc, v.Depth)
	return nil
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func violated(v *view) *predView {
	for i, p := range v.Predicates {
		if !p.OK {
			return &v.Predicates[i]
		}
	}
	return nil
}

func TestExploreAPI(t *testing.T) {
	sc := toy(3, 4)
	ts := httptest.NewServer(New(sc, lookupOf(sc)).Handler())
	defer ts.Close()
	c := client{t, ts.URL}
	v, _ := c.do("GET", "/api/state", "")
	if len(v.Nodes) != 4 || len(v.Network) != 4 || len(v.Timers) != 1 || v.Depth != 0 || violated(v) != nil {
		t.Fatalf("initial view: %+v", v)
	}
	kinds := map[string]bool{}
	for _, e := range v.Events {
		kinds[e.Kind] = true
	}
	for _, k := range []string{"deliver", "duplicate", "drop", "fire"} {
		if !kinds[k] {
			t.Errorf("no %s event enabled initially: %+v", k, v.Events)
		}
	}

	// Ping-pong to the violation: a gets ping 4.
	v = c.take(v, "deliver a -> b")
	if v.Depth != 1 || len(v.Streams) != 1 || v.Streams[0].From != "b" || len(v.Sent) != 2 {
		t.Fatalf("after one delivery: %+v", v)
	}
	for _, n := range v.Nodes {
		if n.Changed != (n.Addr == "b") || (n.Addr == "b" && n.Prev == n.Desc) {
			t.Errorf("node %s changed %v: %q -> %q", n.Addr, n.Changed, n.Prev, n.Desc)
		}
	}
	branchAt := v.Step
	v = c.take(v, "deliver b -> a")
	v = c.take(v, "deliver a -> b")
	v = c.take(v, "deliver b -> a")
	if p := violated(v); p == nil || p.Name != "pings below limit" || p.Explanation != "a got ping 4" || v.Depth != 4 {
		t.Fatalf("no violation at depth 4: %+v", v)
	}

	// The path saved replays to the same violation.
	resp, err := http.Get(ts.URL + "/api/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tf, err := mc.ParseTrace(b)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := mc.Replay(sc, tf)
	if err != nil || rp.Predicate != "pings below limit" || tf.Predicate != rp.Predicate || len(rp.Events) != 4 {
		t.Fatalf("replay: %v %+v", err, rp)
	}

	// Back to step 1, another event: a branch.
	v, _ = c.do("POST", "/api/goto", `{"step":`+itoa(branchAt)+`}`)
	if v.Forward < 0 || v.Depth != 1 {
		t.Fatalf("goto: %+v", v)
	}
	v = c.take(v, "drop f -> s")
	children := 0
	for _, it := range v.Tree {
		if it.Parent == branchAt {
			children++
		}
	}
	if children != 2 || v.Depth != 2 || v.Budget.Drops != 1 {
		t.Fatalf("branch: %d children of step %d, %+v", children, branchAt, v)
	}

	// A bounded search from here lands on a violation.
	v, msg := c.do("POST", "/api/search", `{"target":"violation","maxStates":100000,"maxSeconds":30}`)
	if msg != "" || violated(v) == nil || !strings.Contains(v.Notice, "violation") {
		t.Fatalf("search: %s %+v", msg, v)
	}
	t.Logf("search: %s", v.Notice)

	svg, err := http.Get(ts.URL + "/api/msc.svg")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(svg.Body)
	svg.Body.Close()
	if !strings.HasPrefix(string(b), "<svg") || strings.Count(string(b), `class="msg"`) < v.Depth-1 {
		t.Fatalf("chart of %d steps: %s", v.Depth, b)
	}

	// Bad traces: one-line errors, the view unchanged.
	before := v.Step
	for body, want := range map[string]string{
		`{"version": 1, "scenario": "toy", "events": [`:                                   "corrupted JSON",
		`{"version": 1, "scenario": "nope", "events": []}`:                                `unknown scenario "nope"`,
		`{"version": 7, "scenario": "toy"}`:                                               "version 7",
		`{"version": 1, "scenario": "toy", "initial": "abc"}`:                             "another initial state",
		`{"version": 1, "scenario": "toy", "events": [{"kind": "deliver", "msg": "ff"}]}`: "does not replay at step 1",
	} {
		_, msg := c.do("POST", "/api/load", body)
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("load %s: %q, want %q", body, msg, want)
		}
	}
	if v, _ = c.do("GET", "/api/state", ""); v.Step != before {
		t.Errorf("a bad load moved the explorer to step %d", v.Step)
	}
}

func TestLoadFollowsTrace(t *testing.T) {
	sc := toy(2, 1000)
	r := &mc.Result{Trace: pingPath(sc, 30)}
	sv := New(sc, lookupOf(sc))
	if err := sv.Load(mc.NewTraceFile(sc, r)); err != nil {
		t.Fatal(err)
	}
	v := sv.view()
	if v.Depth != 0 || v.Forward != 1 || v.End != 30 || len(v.Tree) != 31 {
		t.Fatalf("loaded: depth %d forward %d end %d, %d steps", v.Depth, v.Forward, v.End, len(v.Tree))
	}
	// Loading it again adds no steps.
	if err := sv.Load(mc.NewTraceFile(sc, r)); err != nil || len(sv.t.steps) != 31 {
		t.Fatalf("reload: %v, %d steps", err, len(sv.t.steps))
	}
}

// TestChartArrows: each arrow starts at the row of the step that sent its
// message (row 0: Init) and ends at the row of its delivery.
func TestChartArrows(t *testing.T) {
	sc := toy(1, 1000)
	tr := newTree(sc)
	last, err := tr.takeAll(tr.root(), pingPath(sc, 2))
	if err != nil {
		t.Fatal(err)
	}
	svg := string(msc(last.path(), tr.root().st.Addrs()))
	y := func(i int) int { return header + row/2 + i*row }
	for i, want := range []string{
		fmt.Sprintf(`y1="%d" x2="%d" y2="%d"`, y(0), left+lane/2+lane, y(1)), // Init's ping a -> b
		fmt.Sprintf(`y1="%d" x2="%d" y2="%d"`, y(1), left+lane/2, y(2)),      // b's answer, sent at step 1
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("arrow %d: no %s in\n%s", i+1, want, svg)
		}
	}
}
