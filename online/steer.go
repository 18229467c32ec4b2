package online

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/mc"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// Filter is an event filter of execution steering: the unordered
// messages of Kind (runtime.MessageKind) that From sends to To are
// dropped.
type Filter struct {
	From, To node.Addr
	Kind     string
}

func (f Filter) String() string { return fmt.Sprintf("drop %s from %s to %s", f.Kind, f.From, f.To) }

// allows reports whether f lets event e happen.
func (f Filter) allows(e mc.Event) bool {
	if e.Kind != mc.Deliver && e.Kind != mc.Duplicate {
		return true
	}
	return e.Env.From != f.From || e.Env.To != f.To || runtime.MessageKind(e.Env.Msg) != f.Kind
}

// CheckFilter searches from the cut with f installed (the search of
// Options, with its bounds) and returns the search's result: a violation
// means f does not keep the cut safe, and must not be installed.
func (c *Cut) CheckFilter(f Filter, o Options) (*mc.Result, error) {
	init, err := c.State()
	if err != nil {
		return nil, err
	}
	return mc.Search(init, searchOptions(c, o, f.allows)), nil
}

// Steer installs f, for d, on the machine that hosts f.From (conns and
// addrs as for Machines; the machine is the index in f.From).
func Steer(ctx context.Context, conns []grpc.ClientConnInterface, addrs []string, cluster string, f Filter, d time.Duration) error {
	m, err := machineOf(f.From)
	if err != nil {
		return err
	}
	if m >= len(conns) {
		return fmt.Errorf("steer: %s is on machine %d; the cluster has %d", f.From, m, len(conns))
	}
	_, err = wire.NewOnlineClient(conns[m]).Steer(ctx, &wire.SteerRequest{Cluster: cluster, From: string(f.From), To: string(f.To),
		Kind: f.Kind, DurationMs: d.Milliseconds()})
	if err != nil {
		return fmt.Errorf("steer: machine %d (%s): %w", m, addrs[m], err)
	}
	return nil
}
