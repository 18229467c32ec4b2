package online

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// Filter is an event filter of execution steering (runtime/steer.go). By
// Kind: a message kind (runtime.MessageKind) drops the unordered messages
// of that kind From sends To; runtime.StreamKind pauses the stream from
// From to To; runtime.TimerPrefix plus a timer's type postpones From's
// timers of that type (To is From); runtime.CheckPrefix plus a message
// kind postpones From's messages of that kind whose step breaks
// runtime.StepCheck (To is From); runtime.HoldPrefix plus a message kind
// and qualifiers (runtime.Hold) holds at To the matching messages From
// sends (every sender's when From is To), and applies them in operation
// order when it expires.
type Filter struct {
	From, To node.Addr
	Kind     string
}

func (f Filter) String() string {
	switch {
	case f.Kind == runtime.StreamKind:
		return fmt.Sprintf("pause the stream from %s to %s", f.From, f.To)
	case strings.HasPrefix(f.Kind, runtime.TimerPrefix):
		return fmt.Sprintf("postpone %s's %s timers", f.From, strings.TrimPrefix(f.Kind, runtime.TimerPrefix))
	case strings.HasPrefix(f.Kind, runtime.CheckPrefix):
		return fmt.Sprintf("check %s's %s steps", f.From, strings.TrimPrefix(f.Kind, runtime.CheckPrefix))
	case strings.HasPrefix(f.Kind, runtime.HoldPrefix):
		from := "from " + string(f.From)
		if f.From == f.To {
			from = "from every sender"
		}
		return fmt.Sprintf("hold %s at %s %s", strings.TrimPrefix(f.Kind, runtime.HoldPrefix), f.To, from)
	}
	return fmt.Sprintf("drop %s from %s to %s", f.Kind, f.From, f.To)
}

// allows reports whether f lets event e happen. In the search a refused
// event never happens: a dropped message is never delivered, a paused
// stream's head and a postponed timer wait past the search's horizon.
func (f Filter) allows(e mc.Event) bool { return f.allower()(e) }

// allower is f's allows, with a hold filter's kind parsed once (searches
// ask it of every event).
func (f Filter) allower() func(mc.Event) bool {
	if h, ok := f.hold(); ok {
		return func(e mc.Event) bool { return !f.holds(h, e) }
	}
	return f.allowsPlain
}

// allowsPlain is allows for a filter that is not a hold filter.
func (f Filter) allowsPlain(e mc.Event) bool {
	switch e.Kind {
	case mc.Deliver, mc.Duplicate:
		return e.Env.From != f.From || e.Env.To != f.To || runtime.MessageKind(e.Env.Msg) != f.Kind
	case mc.StreamIn:
		return f.Kind != runtime.StreamKind || e.Env.From != f.From || e.Env.To != f.To
	case mc.Fire:
		return e.T == nil || e.Node != f.From || f.Kind != runtime.TimerPrefix+runtime.MessageKind(e.T)
	}
	return true
}

// hold is f's hold filter kind parsed, if f is one (and parses).
func (f Filter) hold() (runtime.Hold, bool) {
	h, ok, err := runtime.ParseHold(f.Kind)
	return h, ok && err == nil
}

// holds reports whether hold filter f (h parsed) refuses e: a delivery to
// f.To of a message h matches, from f.From (from anyone if f.From is
// f.To). The message waits, with those behind it on its stream.
func (f Filter) holds(h runtime.Hold, e mc.Event) bool {
	return (e.Kind == mc.Deliver || e.Kind == mc.Duplicate || e.Kind == mc.StreamIn) && e.Env.To == f.To &&
		(f.From == f.To || e.Env.From == f.From) && h.Matches(e.Env.Msg)
}

// host is the server whose machine applies f: the receiver for a hold
// filter, the sender for the others.
func (f Filter) host() node.Addr {
	if strings.HasPrefix(f.Kind, runtime.HoldPrefix) {
		return f.To
	}
	return f.From
}

// allowsAt reports whether check filter f lets event e happen in state
// s: a delivery to f.From of the kind it checks is refused while its step
// breaks runtime.StepCheck (the message waits, as the runtime holds it).
// Other filters decide by the event alone (allows).
func (f Filter) allowsAt(s *mc.State, e mc.Event) bool {
	k, ok := strings.CutPrefix(f.Kind, runtime.CheckPrefix)
	if !ok || (e.Kind != mc.Deliver && e.Kind != mc.Duplicate && e.Kind != mc.StreamIn) || e.Env.To != f.From || runtime.MessageKind(e.Env.Msg) != k {
		return true
	}
	ns, err := s.Apply(e)
	if err != nil {
		return true // the search reports it
	}
	return runtime.StepCheck.Check(f.From, s.Node(f.From), ns.Node(f.From)) == nil
}

// checkFiltersOf are the check filters of trace: one per node that a
// delivery of a kind runtime.StepCheck checks goes to, from the event
// closest to the violation back to the first.
func checkFiltersOf(trace []mc.Event) []Filter {
	var fs []Filter
	for i := len(trace) - 1; i >= 0; i-- {
		e := trace[i]
		if e.Kind != mc.Deliver && e.Kind != mc.StreamIn {
			continue
		}
		if k := runtime.MessageKind(e.Env.Msg); slices.Contains(runtime.StepCheck.Kinds, k) {
			if f := (Filter{e.Env.To, e.Env.To, runtime.CheckPrefix + k}); !slices.Contains(fs, f) {
				fs = append(fs, f)
			}
		}
	}
	return fs
}

// holdFiltersOf are the hold filters of trace (at most maxHolds): for
// each delivery of a message that carries an operation number, from the
// event closest to the violation back to the first, the hold at its
// receiver of the messages of its kind from every sender for that
// operation and later ones; then the same for its stripe only; then the
// same from its sender only. As with Candidates, those that hold more of
// the trace's events come first (the order above among equals): a hold
// of the deliveries that lead to the bad step rather than of the one that
// only shows it.
func holdFiltersOf(trace []mc.Event) []Filter {
	fs := holdShapes(trace)
	n := map[Filter]int{}
	for _, f := range fs {
		allows := f.allower()
		for _, e := range trace {
			if !allows(e) {
				n[f]++
			}
		}
	}
	slices.SortStableFunc(fs, func(a, b Filter) int { return n[b] - n[a] })
	return fs
}

// holdShapes are the hold filters of trace in the order holdFiltersOf
// describes, before the sort.
func holdShapes(trace []mc.Event) []Filter {
	var fs []Filter
	for shape := range 3 {
		for i := len(trace) - 1; i >= 0 && len(fs) < maxHolds; i-- {
			e := trace[i]
			op, ok := runtime.OpOf(e.Env.Msg)
			if (e.Kind != mc.Deliver && e.Kind != mc.StreamIn) || !ok {
				continue
			}
			h, from := runtime.Hold{Kind: runtime.MessageKind(e.Env.Msg), MinOp: max(op, 1), Stripe: -1}, e.Env.To
			switch st, ok := runtime.StripeOf(e.Env.Msg); {
			case shape == 1 && !ok:
				continue
			case shape == 1:
				h.Stripe = st
			case shape == 2:
				from = e.Env.From
			}
			if f := (Filter{from, e.Env.To, h.String()}); !slices.Contains(fs, f) {
				fs = append(fs, f)
			}
		}
	}
	return fs
}

// maxHolds bounds the hold filters tried for one prediction.
const maxHolds = 8

// filterOf is the filter that refuses event e, if the runtime can refuse
// it.
func filterOf(e mc.Event) (Filter, bool) {
	switch e.Kind {
	case mc.Deliver, mc.Duplicate:
		return Filter{e.Env.From, e.Env.To, runtime.MessageKind(e.Env.Msg)}, true
	case mc.StreamIn:
		return Filter{e.Env.From, e.Env.To, runtime.StreamKind}, true
	case mc.Fire:
		if e.T != nil {
			return Filter{e.Node, e.Node, runtime.TimerPrefix + runtime.MessageKind(e.T)}, true
		}
	}
	return Filter{}, false
}

// Candidates are the filters that refuse an event of a predicted
// violation's trace, each once: those that refuse more of the trace's
// events first (they cut the error path at more points, so they also
// refuse its variants: later operations taking the same streams), and
// among equals, from the event closest to the violation back to the
// first.
func Candidates(trace []mc.Event) []Filter {
	var fs []Filter
	n := map[Filter]int{}
	for i := len(trace) - 1; i >= 0; i-- {
		if f, ok := filterOf(trace[i]); ok {
			if n[f] == 0 {
				fs = append(fs, f)
			}
			n[f]++
		}
	}
	slices.SortStableFunc(fs, func(a, b Filter) int { return n[b] - n[a] })
	return fs
}

// allowAll is the conjunction of filters by event (nil if there are
// none), allowAllAt that of the check filters by state (nil if none).
func allowAll(fs []Filter) func(mc.Event) bool {
	if len(fs) == 0 {
		return nil
	}
	allows := make([]func(mc.Event) bool, len(fs))
	for i, f := range fs {
		allows[i] = f.allower()
	}
	return func(e mc.Event) bool {
		for _, a := range allows {
			if !a(e) {
				return false
			}
		}
		return true
	}
}

func allowAllAt(fs []Filter) func(*mc.State, mc.Event) bool {
	fs = slices.DeleteFunc(slices.Clone(fs), func(f Filter) bool { return !strings.HasPrefix(f.Kind, runtime.CheckPrefix) })
	if len(fs) == 0 {
		return nil
	}
	return func(s *mc.State, e mc.Event) bool {
		for _, f := range fs {
			if !f.allowsAt(s, e) {
				return false
			}
		}
		return true
	}
}

// CheckFilter searches from the cut with f installed (the search of
// Options, with its bounds) and returns the search's result: a violation
// means f does not keep the cut safe, and must not be installed.
func (c *Cut) CheckFilter(f Filter, o Options) (*mc.Result, error) {
	return c.checkFilters([]Filter{f}, o)
}

func (c *Cut) checkFilters(fs []Filter, o Options) (*mc.Result, error) {
	init, err := c.State()
	if err != nil {
		return nil, err
	}
	return explore(init, searchOptions(c, o, fs)), nil
}

// checkLifted is the search after filter f lifts: from the state the cut
// reaches when every delivery that live and f allow has happened (each
// time the first enabled, in the search's order), with only live in
// place. On the cluster f expires once the rest has settled; a filter
// that only postpones the violation fails this search.
func (c *Cut) checkLifted(live []Filter, f Filter, o Options) (*mc.Result, error) {
	s, err := c.State()
	if err != nil {
		return nil, err
	}
	fs := append(slices.Clip(live), f)
	allow, allowAt := allowAll(fs), allowAllAt(fs)
	if s, err = deliverAll(s, func(s *mc.State, evs []mc.Event) int {
		return slices.IndexFunc(evs, func(e mc.Event) bool { return allow(e) && (allowAt == nil || allowAt(s, e)) })
	}); err != nil {
		return nil, err
	}
	if h, ok := f.hold(); ok {
		if s, err = release(s, f, h, live); err != nil {
			return nil, err
		}
	}
	return explore(s, searchOptions(c, o, live)), nil
}

// deliverAll applies, from s, the deliveries pick picks (the index of one
// of the state's deliveries, -1: none) until it picks none, settleSteps
// at most.
func deliverAll(s *mc.State, pick func(*mc.State, []mc.Event) int) (*mc.State, error) {
	for range settleSteps {
		evs := s.Events(mc.Settings{}) // deliveries only
		i := pick(s, evs)
		if i < 0 {
			break
		}
		var err error
		if s, err = s.Apply(evs[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// release is what the runtime does when hold filter f (h parsed)
// expires (runtime/steerhold.go): the messages it holds at f.To, with
// those behind them on their streams, are applied in the order of their
// keys: the highest operation number carried so far on their stream,
// then the sender (an unordered message before a stream's). From s,
// where every delivery the filters allow has happened, every message f
// holds has reached f.To.
func release(s *mc.State, f Filter, h runtime.Hold, live []Filter) (*mc.State, error) {
	allow, allowAt := allowAll(live), allowAllAt(live)
	ran := map[node.Addr]uint64{} // the streams released from: their highest operation so far
	type key struct {
		op     uint64
		from   node.Addr
		stream bool
	}
	return deliverAll(s, func(s *mc.State, evs []mc.Event) int {
		best, bk := -1, key{}
		for i, e := range evs {
			_, behind := ran[e.Env.From]
			behind = behind && e.Kind == mc.StreamIn && e.Env.To == f.To
			if !behind && !f.holds(h, e) || e.Kind == mc.Duplicate || allow != nil && !allow(e) || allowAt != nil && !allowAt(s, e) {
				continue
			}
			k := key{from: e.Env.From, stream: e.Kind == mc.StreamIn}
			k.op, _ = runtime.OpOf(e.Env.Msg)
			if k.stream {
				k.op = max(k.op, ran[e.Env.From])
			}
			if best < 0 || cmp.Or(cmp.Compare(k.op, bk.op), cmp.Compare(k.from, bk.from), boolCompare(k.stream, bk.stream)) < 0 {
				best, bk = i, k
			}
		}
		if best >= 0 && bk.stream {
			ran[bk.from] = bk.op
		}
		return best
	})
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// settleSteps bounds the deliveries checkLifted makes before f lifts.
const settleSteps = 10000

// Steerer installs a filter on the live cluster for d.
type Steerer func(ctx context.Context, f Filter, d time.Duration) error

// Installed is a filter installed by automatic steering.
type Installed struct {
	Filter    Filter
	Cut       int       // the cut (1-based) whose prediction chose it
	Reinstall bool      // a filter of an earlier error path, reinstalled
	At        time.Time // when it was installed
}

// steering is a run's automatic steering: the filters live on the cluster
// and the filters of every error path steered so far.
type steering struct {
	live  []liveFilter
	paths []Filter
}

type liveFilter struct {
	f     Filter
	until time.Time
}

// active is the filters live for at least horizon: the search from a cut
// takes them as installed, and one expiring sooner as gone, so that its
// error path, if still reachable, is predicted again and the filter
// renewed before it lapses. Expired filters are forgotten.
func (s *steering) active(horizon time.Duration) []Filter {
	return s.liveFor(func(until, soon time.Time) bool { return !until.Before(soon) }, horizon)
}

// expiring is the filters live for less than horizon.
func (s *steering) expiring(horizon time.Duration) []Filter {
	return s.liveFor(func(until, soon time.Time) bool { return until.Before(soon) }, horizon)
}

func (s *steering) liveFor(keep func(until, soon time.Time) bool, horizon time.Duration) []Filter {
	now := time.Now()
	s.live = slices.DeleteFunc(s.live, func(l liveFilter) bool { return l.until.Before(now) })
	var fs []Filter
	for _, l := range s.live {
		if keep(l.until, now.Add(horizon)) && !slices.Contains(fs, l.f) {
			fs = append(fs, l.f)
		}
	}
	return fs
}

// steer answers a prediction from cut c (number i): the candidates of the
// trace are tried (one that is an earlier error path's filter is a
// reinstall), then the other earlier error paths' filters; the first
// whose searches from the cut (with the live filters, and after it lifts)
// find no violation is installed.
func (s *steering) steer(ctx context.Context, c *Cut, i int, r *mc.Result, o Options, rep *Report, log io.Writer) error {
	live := s.active(renewWithin * o.Every)
	try := func(f Filter, again bool) (bool, error) {
		if slices.Contains(live, f) {
			return false, nil
		}
		// The two searches run side by side: a filter late by their time
		// may come after the step it was to refuse.
		var lr *mc.Result
		var lerr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			lr, lerr = c.checkLifted(live, f, o)
		}()
		cr, err := c.checkFilters(append(slices.Clip(live), f), o)
		<-done
		if err == nil {
			err = lerr
		}
		if err != nil || cr.Outcome == mc.Violation || lr.Outcome == mc.Violation {
			return false, err
		}
		d := o.SteerFor
		if strings.HasPrefix(f.Kind, runtime.CheckPrefix) {
			d = o.CheckFor
		} else if strings.HasPrefix(f.Kind, runtime.HoldPrefix) {
			d = o.HoldFor
		}
		if err := o.Steer(ctx, f, d); err != nil {
			return false, err
		}
		s.live = append(s.live, liveFilter{f, time.Now().Add(d)})
		if !again {
			s.paths = append(s.paths, f)
		}
		rep.Installed = append(rep.Installed, Installed{Filter: f, Cut: i, Reinstall: again, At: time.Now()})
		if log != nil {
			what := "installed"
			if again {
				what = "reinstalled"
			}
			fmt.Fprintf(log, "steer: %s %s for %v (checked: %d states, no violation)\n", what, f, d, cr.States)
		}
		return true, nil
	}
	cands := Candidates(r.Trace)
	if o.CheckFilters {
		cands = append(checkFiltersOf(r.Trace), cands...)
	}
	if o.HoldFilters {
		// The hold filters about to lapse come first: renewed while a
		// violation is predicted, they keep holding what they hold
		// (a new trace's hold may start at a later operation).
		cands = s.expiring(renewWithin * o.Every)
		for _, f := range holdFiltersOf(r.Trace) {
			if !slices.Contains(cands, f) {
				cands = append(cands, f)
			}
		}
	}
	for _, f := range cands {
		if ok, err := try(f, slices.Contains(s.paths, f)); ok || err != nil {
			return err
		}
	}
	for _, f := range s.paths {
		if slices.Contains(cands, f) {
			continue
		}
		if ok, err := try(f, true); ok || err != nil {
			return err
		}
	}
	rep.Unsteered++
	if log != nil {
		fmt.Fprintf(log, "steer: no candidate filter of the trace keeps cut %d safe\n", i)
	}
	return nil
}

// Steer installs f, for d, on the machine that applies it (conns and
// addrs as for Machines; the machine is the index in the address of
// f.From, or of f.To for a hold filter).
func Steer(ctx context.Context, conns []grpc.ClientConnInterface, addrs []string, cluster string, f Filter, d time.Duration) error {
	m, err := machineFor(f, len(conns))
	if err != nil {
		return err
	}
	_, err = wire.NewOnlineClient(conns[m]).Steer(ctx, &wire.SteerRequest{Cluster: cluster, From: string(f.From), To: string(f.To),
		Kind: f.Kind, DurationMs: d.Milliseconds()})
	if err != nil {
		return fmt.Errorf("steer: machine %d (%s): %w", m, addrs[m], err)
	}
	return nil
}

// MachinesSteerer is a Steerer over the machines' Online service.
func MachinesSteerer(conns []grpc.ClientConnInterface, addrs []string, cluster string) Steerer {
	return func(ctx context.Context, f Filter, d time.Duration) error {
		return Steer(ctx, conns, addrs, cluster, f, d)
	}
}

// LocalSteerer is a Steerer over machines in this process.
func LocalSteerer(machines []*runtime.Machine) Steerer {
	return func(_ context.Context, f Filter, d time.Duration) error {
		m, err := machineFor(f, len(machines))
		if err != nil {
			return err
		}
		machines[m].Steer(f.From, f.To, f.Kind, d)
		return nil
	}
}

// machineFor is the machine that applies f, of a cluster of n.
func machineFor(f Filter, n int) (int, error) {
	m, err := machineOf(f.host())
	if err != nil {
		return 0, err
	}
	if m >= n {
		return 0, fmt.Errorf("steer: %s is on machine %d; the cluster has %d", f.host(), m, n)
	}
	return m, nil
}
