package explore

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/amalgam-store/amalgam/mc"
)

//go:embed assets
var assets embed.FS

// Server serves the explorer of one scenario at a time (loading a trace
// of another scenario switches to it). Its methods are safe for
// concurrent use.
type Server struct {
	mu     sync.Mutex
	lookup func(string) (*mc.Scenario, error)
	t      *tree
	notice string // the outcome of the last search or load
}

// New explores sc; lookup finds the scenario a loaded trace names.
func New(sc *mc.Scenario, lookup func(string) (*mc.Scenario, error)) *Server {
	return &Server{lookup: lookup, t: newTree(sc)}
}

// Load replays tf as a branch from the initial state (of its scenario,
// which becomes the explored one) and goes to the initial state, with
// "forward" following the trace. The error is one line.
func (sv *Server) Load(tf *mc.TraceFile) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.load(tf)
}

func (sv *Server) load(tf *mc.TraceFile) error {
	sc, err := sv.lookup(tf.Scenario)
	if err != nil {
		return err
	}
	rp, err := mc.Replay(sc, tf)
	if err != nil {
		return err
	}
	t := sv.t
	if sc.Name != t.sc.Name {
		t = newTree(sc)
	}
	last, err := t.takeAll(t.root(), rp.Events)
	if err != nil {
		return fmt.Errorf("trace of scenario %q: %v", sc.Name, err)
	}
	sv.t, t.cur = t, t.root()
	sv.notice = fmt.Sprintf("loaded a trace of %d steps: step 0 of it; forward (→) follows it", last.depth)
	if rp.Predicate != "" {
		sv.notice += fmt.Sprintf("; it ends violating %q", rp.Predicate)
	}
	return nil
}

// Handler is the page, its assets and its JSON API.
func (sv *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("GET /api/state", sv.api(func(*http.Request) error { return nil }))
	mux.HandleFunc("POST /api/step", sv.api(sv.step))
	mux.HandleFunc("POST /api/goto", sv.api(sv.goTo))
	mux.HandleFunc("POST /api/search", sv.api(sv.search))
	mux.HandleFunc("POST /api/load", sv.api(sv.loadBody))
	mux.HandleFunc("GET /api/trace.json", sv.saveTrace)
	mux.HandleFunc("GET /api/msc.svg", sv.msc)
	return mux
}

// api runs act under the lock and answers with the current view, or with
// status 400 and {"error": ...} (the view is unchanged then).
func (sv *Server) api(act func(*http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sv.mu.Lock()
		err := act(r)
		var body any
		if err != nil {
			body = map[string]string{"error": oneLine(err.Error())}
		} else {
			body = sv.view()
		}
		sv.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
		}
		_ = json.NewEncoder(w).Encode(body)
	}
}

func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("bad request: %v", err)
	}
	return nil
}

func (sv *Server) at(id int) (*step, error) {
	if id < 0 || id >= len(sv.t.steps) {
		return nil, fmt.Errorf("no step #%d in the history", id)
	}
	return sv.t.steps[id], nil
}

// step takes enabled event number Event of step Step.
func (sv *Server) step(r *http.Request) error {
	var req struct{ Step, Event int }
	if err := decode(r, &req); err != nil {
		return err
	}
	s, err := sv.at(req.Step)
	if err != nil {
		return err
	}
	evs := s.st.Events(sv.t.sc.Settings)
	if req.Event < 0 || req.Event >= len(evs) {
		return fmt.Errorf("no enabled event %d at step #%d", req.Event, req.Step)
	}
	n, err := sv.t.take(s, evs[req.Event])
	if err != nil {
		return err
	}
	sv.t.cur, sv.notice = n, ""
	return nil
}

func (sv *Server) goTo(r *http.Request) error {
	var req struct{ Step int }
	if err := decode(r, &req); err != nil {
		return err
	}
	s, err := sv.at(req.Step)
	if err != nil {
		return err
	}
	if s.parent != nil {
		s.parent.next = s
	}
	sv.t.cur, sv.notice = s, ""
	return nil
}

func (sv *Server) loadBody(r *http.Request) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return err
	}
	tf, err := mc.ParseTrace(b)
	if err != nil {
		return fmt.Errorf("load trace: %v", err)
	}
	if err := sv.load(tf); err != nil {
		return fmt.Errorf("load trace: %v", err)
	}
	return nil
}

// Search bounds: a search holds the explorer until it ends.
const (
	maxSearchStates = 10_000_000
	maxSearchTime   = time.Minute
)

// search runs a bounded BFS from the current state and goes to the state
// it finds.
func (sv *Server) search(r *http.Request) error {
	var req struct {
		MaxStates  int
		MaxSeconds float64
		Target     string // violation, reply or quiet
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	t, cur := sv.t, sv.t.cur
	o := mc.Options{Strategy: mc.BFS, Settings: t.sc.Settings, Invariants: t.inv, Workers: 1,
		MaxStates: min(max(req.MaxStates, 1), maxSearchStates),
		MaxTime:   min(max(time.Duration(req.MaxSeconds*float64(time.Second)), time.Millisecond), maxSearchTime)}
	if t.sc.MaxDepth > 0 {
		o.MaxDepth = max(1, t.sc.MaxDepth-cur.depth)
	}
	switch req.Target {
	case "violation", "":
	case "reply":
		o.Goals = []mc.Predicate{mc.RepliesAtLeast(cur.st.Returned() + 1)}
	case "quiet":
		o.Goals = []mc.Predicate{mc.Pred("no message in flight", func(s *mc.State) (bool, string) {
			return s.Quiet(), fmt.Sprintf("%d unordered messages in flight", len(s.Network()))
		})}
	default:
		return fmt.Errorf("search target must be violation, reply or quiet, got %q", req.Target)
	}
	res := mc.Search(cur.st, o)
	sv.notice = fmt.Sprintf("search from step %d: %s after %d states in %.2fs", cur.depth, res.Outcome, res.States, res.Elapsed.Seconds())
	if res.Outcome != mc.Violation && res.Outcome != mc.GoalFound {
		sv.notice += "; nothing found, still here"
		return nil
	}
	sv.notice += fmt.Sprintf(": %q (%s), %d steps on", res.Predicate, res.Explanation, len(res.Trace))
	last, err := t.takeAll(cur, res.Trace)
	t.cur = last
	return err
}

func (sv *Server) saveTrace(w http.ResponseWriter, _ *http.Request) {
	sv.mu.Lock()
	tf := sv.t.traceFile(sv.t.cur)
	sv.mu.Unlock()
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", tf.Scenario+"-trace.json"))
	_, _ = w.Write(append(b, '\n'))
}

func (sv *Server) msc(w http.ResponseWriter, r *http.Request) {
	sv.mu.Lock()
	b := msc(sv.t.cur.path(), sv.t.root().st.Addrs())
	sv.mu.Unlock()
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Has("download") {
		w.Header().Set("Content-Disposition", `attachment; filename="msc.svg"`)
	}
	_, _ = w.Write(b)
}

// oneLine folds an error's text onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
