package faults_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/e2e/e2etest"
	"github.com/amalgam-store/amalgam/erasure"
)

// cluster is a durable Amalgam cluster of separate processes: 3
// reconfiguration replicas, one process per machine slot, and spares.
type cluster struct {
	t       *testing.T
	l       erasure.Layout
	dir     string
	suspect time.Duration
	reps    []string
	repProc map[string]*e2etest.Proc
	entries string
	hosts   []string                 // every host address machines and spares use
	host    map[string]*e2etest.Proc // the process at each host address, if started
	gen     int                      // data directories made so far
	net     *netns                   // nil: no partitions
	admin   *client.Client
	mu      sync.Mutex
	procs   []*e2etest.Proc // every process started, for the logs
}

func newCluster(t *testing.T, spares int, net *netns) *cluster {
	c := &cluster{t: t, l: erasure.Layout{N: 6, G: 3, F: 2, W: 1, Stripes: 12, BlockSize: 64}, dir: t.TempDir(),
		suspect: time.Second, repProc: map[string]*e2etest.Proc{}, host: map[string]*e2etest.Proc{}, net: net}
	ip := "127.0.0.1"
	if net != nil {
		ip = net.hostIP
	}
	c.reps = e2etest.FreeAddrs(t, ip, 3)
	c.entries = strings.Join(c.reps, ",")
	for i := 0; i < c.l.N+spares; i++ {
		c.hosts = append(c.hosts, c.hostAddr(i))
	}
	for i := range c.reps {
		c.startReplica(i)
	}
	for m := 0; m < c.l.N; m++ {
		c.startHost(c.hosts[m], m)
	}
	for i := c.l.N; i < len(c.hosts); i++ {
		c.startHost(c.hosts[i], -1)
	}
	c.admin = e2etest.DialAttempt(t, c.entries, 2*time.Second)
	t.Cleanup(func() {
		for _, p := range c.procs {
			p.Kill()
		}
	})
	return c
}

// hostAddr is host i's address: on loopback, or in its own network
// namespace when partitions are on.
func (c *cluster) hostAddr(i int) string {
	if c.net != nil {
		return c.net.addr(i)
	}
	return e2etest.FreeAddrs(c.t, "127.0.0.1", 1)[0]
}

func (c *cluster) logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, p := range c.procs {
		b.WriteString(p.Out.String())
	}
	return b.String()
}

func (c *cluster) start(name, ready string, wrap []string, args ...string) *e2etest.Proc {
	c.t.Helper()
	argv := append(append(slices.Clone(wrap), filepath.Join(bin, "amalgam-server")), args...)
	p := e2etest.StartProc(c.t, name, ready, argv...)
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p
}

func (c *cluster) startReplica(i int) {
	var peers []string
	for j, b := range c.reps {
		if j != i {
			peers = append(peers, fmt.Sprintf("%d=%s", j+1, b))
		}
	}
	l := c.l
	var machines []string
	for m := 0; m < l.N; m++ {
		machines = append(machines, c.hosts[m])
	}
	c.repProc[c.reps[i]] = c.start(fmt.Sprintf("reconfig %d", i+1), "reconfiguration service", nil,
		"reconfig", "--id", fmt.Sprint(i+1), "--peers", strings.Join(peers, ","), "--addr", c.reps[i],
		"--data-dir", filepath.Join(c.dir, fmt.Sprintf("reconfig-%d", i+1)), "--machine-addrs", strings.Join(machines, ","),
		"--g", fmt.Sprint(l.G), "--f", fmt.Sprint(l.F), "--w", fmt.Sprint(l.W), "--block-size", fmt.Sprint(l.BlockSize),
		"--blocks", fmt.Sprint(l.NumBlocks()), "--suspect-after", c.suspect.String())
}

// startHost starts the host at addr as machine m, or as a spare (m < 0)
// with a new, empty data directory.
func (c *cluster) startHost(addr string, m int) {
	c.gen++
	c.startHostIn(addr, m, filepath.Join(c.dir, fmt.Sprintf("host-%d", c.gen)))
}

func (c *cluster) startHostIn(addr string, m int, dataDir string) {
	var wrap []string
	if c.net != nil {
		wrap = c.net.exec(slices.Index(c.hosts, addr))
	}
	args := []string{"node", "--addr", addr, "--reconfig", c.entries, "--data-dir", dataDir}
	ready := "serving at"
	if m >= 0 {
		args = append(args, "--machine", fmt.Sprint(m))
	} else {
		args = append(args, "--spare")
		ready = "spare serving at"
	}
	c.host[addr] = c.start(fmt.Sprintf("host %s", addr), ready, wrap, args...)
}

func (c *cluster) dataDir(addr string) string {
	args := c.host[addr].Cmd.Args
	return args[slices.Index(args, "--data-dir")+1]
}

// state is what the reconfiguration service and the machines report.
type state struct {
	hosts, spares []string
	num           uint64
	leader        string
	settled       bool // no replacement in progress or queued, nothing degraded
	healthy       bool
	why           string
}

// observe asks the service and every machine, as amalgam-cli status does:
// healthy means every server answers on the newest configuration with no
// degraded block, and no replacement is in progress, queued or rebuilding.
func (c *cluster) observe() state {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := c.admin.History(ctx)
	if err != nil {
		return state{why: err.Error()}
	}
	cfgs := h.GetConfigs()
	s := state{hosts: h.GetDirectory().GetHosts(), spares: h.GetDirectory().GetSpares(), num: cfgs[len(cfgs)-1].GetNum(),
		leader: h.GetLeaderAddr()}
	s.settled = !h.GetBusy() && len(h.GetDegraded()) == 0
	if !s.settled {
		s.why = fmt.Sprintf("configuration %d: busy %v, degraded %v", s.num, h.GetBusy(), h.GetDegraded())
		return s
	}
	st, err := c.admin.Status(ctx)
	if err != nil {
		s.why = err.Error()
		return s
	}
	want := 3 * c.l.N
	if len(st.GetNodes()) != want {
		s.why = fmt.Sprintf("%d of %d servers answer", len(st.GetNodes()), want)
		return s
	}
	for _, n := range st.GetNodes() {
		if n.GetConfigNum() != st.GetConfigNum() || n.GetDegradedBlocks() > 0 {
			s.why = fmt.Sprintf("%s: configuration %d of %d, %d degraded blocks", n.GetAddr(), n.GetConfigNum(), st.GetConfigNum(), n.GetDegradedBlocks())
			return s
		}
	}
	s.healthy, s.why = true, fmt.Sprintf("healthy at configuration %d", s.num)
	return s
}

// phases are when, after a fault, a slot first moved and the service
// first reported no replacement in progress and nothing degraded.
type phases struct{ moved, settled time.Duration }

// waitHealthy polls until the cluster is healthy, and every host that
// serves a slot is running, for at most 10 minutes (a hang guard: healing
// takes seconds) and never past 2 minutes before the test's deadline, so
// that a cluster that does not heal fails with its state and logs. It
// returns the time taken, whether it healed, and the phases (moves
// relative to the hosts before).
func (c *cluster) waitHealthy(since time.Time, before []string) (time.Duration, bool, state, phases) {
	end := time.Now().Add(10 * time.Minute)
	if d, ok := c.t.Deadline(); ok && d.Add(-2*time.Minute).Before(end) {
		end = d.Add(-2 * time.Minute)
	}
	var s state
	var ph phases
	for time.Now().Before(end) {
		s = c.observe()
		if ph.moved == 0 && s.hosts != nil && !slices.Equal(s.hosts, before) {
			ph.moved = time.Since(since)
		}
		if ph.settled == 0 && s.settled {
			ph.settled = time.Since(since)
		}
		if s.healthy && c.serving(s) {
			return time.Since(since), true, s, ph
		}
		if !s.settled {
			ph.settled = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(since), false, s, ph
}

// serving reports whether every slot's host runs.
func (c *cluster) serving(s state) bool {
	for _, h := range s.hosts {
		if p := c.host[h]; p == nil || p.Exited() {
			return false
		}
	}
	return true
}

// replenish restarts as spares, with empty data directories, the hosts
// that serve no slot and are not registered spares, and waits until the
// service lists them.
func (c *cluster) replenish() {
	start := time.Now()
	defer func() {
		if d := time.Since(start); d > 5*time.Second {
			c.t.Logf("replenishing the spares took %v", d.Round(time.Millisecond))
		}
	}()
	s := c.observe()
	var want []string
	for _, h := range c.hosts {
		if slices.Contains(s.hosts, h) {
			continue
		}
		want = append(want, h)
		if p := c.host[h]; p == nil || p.Exited() {
			c.startHost(h, -1)
		} else if !slices.Contains(s.spares, h) {
			p.Kill() // replaced, and not yet aware of it
			c.startHost(h, -1)
		}
	}
	for deadline := time.Now().Add(e2etest.SafetyStop); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		s = c.observe()
		ok := true
		for _, h := range want {
			ok = ok && slices.Contains(s.spares, h)
		}
		if ok {
			return
		}
	}
	c.t.Errorf("spares %v not registered: %v", want, s.spares)
}
