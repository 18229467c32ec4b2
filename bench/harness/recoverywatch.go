package harness

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/wire"
)

// pollEvery is how often the watcher asks the reconfiguration service
// and the machines: events are recorded up to this much (plus the
// call) late.
const pollEvery = 100 * time.Millisecond

// healthy is amalgam-cli status's test on its servers: every server
// (a data and a parity server per machine; no witnesses) answers, is in
// the newest configuration and has no block left to rebuild.
func healthy(st *wire.StatusResponse) (bool, string) {
	want := 2 * len(st.GetMachines())
	var degraded int64
	ok := len(st.GetNodes()) == want
	for _, n := range st.GetNodes() {
		ok = ok && n.GetConfigNum() == st.GetConfigNum()
		degraded += n.GetDegradedBlocks()
	}
	return ok && degraded == 0, fmt.Sprintf("configuration %d: %d of %d servers answer, %d blocks to rebuild", st.GetConfigNum(), len(st.GetNodes()), want, degraded)
}

// waitHealthy polls until the cluster is healthy in configuration num.
func waitHealthy(ctx context.Context, c *client.Client, num uint64, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(end) {
		ok, why := healthyIn(ctx, c, num)
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
	return fmt.Errorf("not within %v: %s", timeout, last)
}

func healthyIn(ctx context.Context, c *client.Client, num uint64) (bool, string) {
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := c.Status(actx)
	if err != nil {
		return false, err.Error()
	}
	ok, why := healthy(st)
	return ok && st.GetConfigNum() == num, why
}

// history is the reconfiguration service's newest configuration.
type history struct {
	hosts []string
	num   uint64
	busy  bool
}

func lastHistory(ctx context.Context, c *client.Client) (history, error) {
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	h, err := c.History(actx)
	if err != nil {
		return history{}, err
	}
	cfgs := h.GetConfigs()
	if len(cfgs) == 0 {
		return history{}, fmt.Errorf("history has no configuration")
	}
	return history{hosts: h.GetDirectory().GetHosts(), num: cfgs[len(cfgs)-1].GetNum(), busy: h.GetBusy()}, nil
}

// watchRecovery kills the victim KillAfter into the load (started at
// t0) and records the events until the cluster is healthy again or the
// load ends.
func watchRecovery(ctx context.Context, admin *client.Client, cl *recoveryCluster, o RecoveryOptions, t0 time.Time,
	loadDone <-chan struct{}, progress func(string, ...any)) []RecoveryEvent {
	var events []RecoveryEvent
	at := func(name string) {
		e := RecoveryEvent{Name: name, AtS: time.Since(t0).Seconds()}
		events = append(events, e)
		progress("%6.2f s: %s", e.AtS, name)
	}
	h0, err := lastHistory(ctx, admin)
	if err != nil {
		progress("history before the kill: %v", err)
		return nil
	}
	select {
	case <-loadDone:
		return nil
	case <-ctx.Done():
		return nil
	case <-time.After(time.Until(t0.Add(o.KillAfter))):
	}
	if err := syscall.Kill(cl.victim.pid, syscall.SIGKILL); err != nil {
		progress("kill machine %d: %v", o.Victim, err)
		return nil
	}
	at(EventKill)
	var num uint64
	var said time.Time
	for {
		select {
		case <-loadDone:
			return events
		case <-ctx.Done():
			return events
		case <-time.After(pollEvery):
		}
		switch len(events) {
		case 1:
			if h, err := lastHistory(ctx, admin); err == nil && o.Victim < len(h.hosts) && h.hosts[o.Victim] == cl.spare {
				at(EventMoved)
			}
		case 2:
			// Moving the slot and replacing its servers are two
			// configurations (as in e2e/reconfig).
			if h, err := lastHistory(ctx, admin); err == nil && h.num >= h0.num+2 && !h.busy {
				num = h.num
				at(EventReplaced)
			}
		case 3:
			ok, why := healthyIn(ctx, admin, num)
			if ok {
				at(EventHealthy)
				return events
			}
			if time.Since(said) >= 2*time.Second {
				said = time.Now()
				progress("%6.2f s: %s", time.Since(t0).Seconds(), why)
			}
		}
	}
}
