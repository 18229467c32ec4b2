// Package faults_test injects faults into a cluster of separate
// amalgam-server processes in durable mode (3 reconfiguration replicas,
// 6 machines with g=3 f=2 w=1, 2 spares) while clients record a history:
// SIGKILL with and without restart, SIGSTOP/SIGCONT past the failure
// detector, reconfiguration leader kills and pauses, two machines at once,
// and network partitions where network namespaces are available. After
// each run it checks the whole history with porcupine and counts lost
// acknowledged writes, operations that never completed after healing,
// and the time to healthy per fault. See docs/reliability.md.
package faults_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/e2e/e2etest"
)

var (
	long    = e2etest.NewOptIn("faults.long", "run the long fault suite (see docs/reliability.md)")
	seeds   = flag.Int("faults.seeds", 5, "long suite: seeds (one cluster each)")
	perSeed = flag.Int("faults.per-seed", 28, "long suite: faults per seed")
	workers = flag.Int("faults.workers", 8, "clients")
	only    = flag.String("faults.kinds", "", "long suite: only these kinds of fault, comma-separated")
)

var bin string

func TestMain(m *testing.M) { e2etest.Main(m, &bin, false, "amalgam-server") }

// kind is a kind of fault. inject returns once the fault is over (a
// pause or partition ended, a killed process restarted or not).
type kind struct {
	name   string
	moves  int // moves to a spare it causes
	inject func(c *cluster, rng *rand.Rand, s state) string
}

func slotHosts(s state, rng *rand.Rand, n int) []string {
	perm := rng.Perm(len(s.hosts))
	var out []string
	for _, m := range perm[:n] {
		out = append(out, s.hosts[m])
	}
	return out
}

var (
	kill = kind{"kill", 1, func(c *cluster, rng *rand.Rand, s state) string {
		h := slotHosts(s, rng, 1)[0]
		c.host[h].Kill()
		return h
	}}
	killRestart = kind{"kill-restart", 0, func(c *cluster, rng *rand.Rand, s state) string {
		h := slotHosts(s, rng, 1)[0]
		dir := c.dataDir(h)
		c.host[h].Kill()
		c.startHostIn(h, slices.Index(s.hosts, h), dir)
		return h
	}}
	pause = kind{"pause", 1, func(c *cluster, rng *rand.Rand, s state) string {
		h := slotHosts(s, rng, 1)[0]
		c.host[h].Signal(syscall.SIGSTOP)
		time.Sleep(3 * c.suspect)
		c.host[h].Signal(syscall.SIGCONT)
		return h
	}}
	double = kind{"double", 2, func(c *cluster, rng *rand.Rand, s state) string {
		hs := slotHosts(s, rng, 2) // every stripe spans all six machines
		for _, h := range hs {
			c.host[h].Signal(syscall.SIGKILL)
		}
		for _, h := range hs {
			c.host[h].Kill()
		}
		return strings.Join(hs, "+")
	}}
	leaderKill = kind{"leader-kill", 0, func(c *cluster, _ *rand.Rand, s state) string {
		i := slices.Index(c.reps, s.leader)
		c.repProc[s.leader].Kill()
		time.Sleep(time.Second)
		c.startReplica(i)
		return s.leader
	}}
	leaderPause = kind{"leader-pause", 0, func(c *cluster, _ *rand.Rand, s state) string {
		c.repProc[s.leader].Signal(syscall.SIGSTOP)
		time.Sleep(3 * time.Second) // past the election timeout (1 s)
		c.repProc[s.leader].Signal(syscall.SIGCONT)
		return s.leader
	}}
	partition = kind{"partition", 1, func(c *cluster, rng *rand.Rand, s state) string {
		h := slotHosts(s, rng, 1)[0]
		i := slices.Index(c.hosts, h)
		if err := c.net.cut(i, true); err != nil {
			c.t.Fatal(err)
		}
		time.Sleep(3 * c.suspect)
		if err := c.net.cut(i, false); err != nil {
			c.t.Fatal(err)
		}
		return h
	}}
)

// outcome is one fault's result.
type outcome struct {
	kind   string
	target string
	heal   time.Duration
	healed bool
	moves  int
}

// run is one cluster under a schedule of faults.
type run struct {
	c        *cluster
	ld       *e2etest.Load
	outcomes []outcome
	windows  [][2]time.Time // healthy windows: [healed, next fault]
}

func (r *run) fault(k kind, rng *rand.Rand) {
	c := r.c
	before := c.observe()
	if !before.healthy || before.leader == "" {
		_, ok, s, _ := c.waitHealthy(time.Now(), nil)
		if !ok {
			c.t.Fatalf("not healthy before %s: %s", k.name, s.why)
		}
		before = s
	}
	if n := len(r.windows); n > 0 {
		r.windows[n-1][1] = time.Now()
	}
	start := time.Now()
	target := k.inject(c, rng, before)
	d, ok, after, ph := c.waitHealthy(start, before.hosts)
	o := outcome{kind: k.name, target: target, heal: d, healed: ok}
	for m := range after.hosts {
		if m < len(before.hosts) && after.hosts[m] != before.hosts[m] {
			o.moves++
		}
	}
	r.outcomes = append(r.outcomes, o)
	c.t.Logf("%-12s %-28s healthy after %-8v moves %d (moved %v, service settled %v)  (%d operations so far)", k.name, target,
		d.Round(time.Millisecond), o.moves, ph.moved.Round(time.Millisecond), ph.settled.Round(time.Millisecond), r.ld.Ops())
	if !ok {
		c.t.Errorf("%s of %s: not healthy again: %s", k.name, target, after.why)
		return
	}
	r.windows = append(r.windows, [2]time.Time{time.Now(), time.Now().Add(time.Hour)})
	c.replenish()
	time.Sleep(time.Second)
}

// runSchedule starts a cluster, runs the faults with clients, and checks
// the history. It returns the outcomes and the operation count.
func runSchedule(t *testing.T, seed uint64, schedule []kind, net *netns) ([]outcome, int, int, int) {
	c := newCluster(t, 2, net)
	defer func() {
		if t.Failed() || *e2etest.KeepLogs {
			t.Logf("process output:\n%s", c.logs())
		}
	}()
	if _, ok, s, _ := c.waitHealthy(time.Now(), nil); !ok {
		t.Fatalf("not healthy at first: %s", s.why)
	}
	ld := newLoad(c, seed, *workers)
	r := &run{c: c, ld: ld}
	rng := rand.New(rand.NewPCG(seed, 7))
	time.Sleep(2 * time.Second)
	for _, k := range schedule {
		r.fault(k, rng)
		if t.Failed() {
			break
		}
	}
	time.Sleep(2 * time.Second)
	if n := len(r.windows); n > 0 {
		r.windows[n-1][1] = time.Now()
	}
	t.Logf("stopping the clients")
	lost := finish(ld)
	never := neverCompleted(ld, r.windows)
	ops := ld.Ops()
	t.Logf("final reads done; checking %d operations", ops)
	v, viz := ld.Check("faults")
	if p := v.Problem(); p != "" {
		t.Errorf("%s; visualization in %s", p, viz)
	}
	t.Logf("seed %d: %d operations, %d acknowledged writes, %d never returned, %d never completed after healing, "+
		"%d acknowledged writes lost, %v", seed, ops, ld.Acked(), ld.Pending(), never, lost, v)
	return r.outcomes, ops, lost, never
}

// summary logs the time to healthy per kind and the double/single ratio.
func summary(t *testing.T, all []outcome) {
	by := map[string][]time.Duration{}
	moves, unhealed := 0, 0
	for _, o := range all {
		moves += o.moves
		if !o.healed {
			unhealed++
			continue
		}
		by[o.kind] = append(by[o.kind], o.heal)
	}
	mean := func(ds []time.Duration) time.Duration {
		var s time.Duration
		for _, d := range ds {
			s += d
		}
		return s / time.Duration(max(len(ds), 1))
	}
	var kinds []string
	for k := range by {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		ds := by[k]
		slices.Sort(ds)
		t.Logf("%-12s n=%-3d time to healthy: mean %v, median %v, max %v", k, len(ds), mean(ds).Round(time.Millisecond),
			ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	t.Logf("%d faults, %d moves to a spare, %d not healed", len(all), moves, unhealed)
	if len(by["kill"]) > 0 && len(by["double"]) > 0 {
		t.Logf("double/single time to healthy: %.2f", float64(mean(by["double"]))/float64(mean(by["kill"])))
	}
}

func partitions(t *testing.T) *netns {
	n, err := newNetns(8)
	if err != nil {
		t.Logf("partitions skipped: %v", err)
		return nil
	}
	t.Cleanup(n.close)
	return n
}

// TestFaults is the short form: one of each kind (partitions where
// network namespaces are available).
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process fault injection: a few minutes")
	}
	if long.On() {
		t.Skip("-faults.long runs TestFaultsLong instead")
	}
	net := partitions(t)
	schedule := []kind{kill, pause, leaderKill, double, killRestart, leaderPause}
	if net != nil {
		schedule = append(schedule, partition)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	out, _, _, _ := runSchedule(t, seed, schedule, net)
	summary(t, out)
}

// TestFaultsLong runs -faults.seeds clusters with -faults.per-seed random
// faults each (go test ./e2e/faults -faults.long -timeout 3h -v).
func TestFaultsLong(t *testing.T) {
	long.Require(t)
	net := partitions(t)
	kinds := []kind{kill, kill, pause, double, double, killRestart, leaderKill, leaderPause}
	if net != nil {
		kinds = append(kinds, partition)
	}
	if *only != "" {
		names := strings.Split(*only, ",")
		kinds = slices.DeleteFunc(kinds, func(k kind) bool { return !slices.Contains(names, k.name) })
	}
	var all []outcome
	ops, lost, never := 0, 0, 0
	for s := 1; s <= *seeds; s++ {
		t.Run(fmt.Sprintf("seed-%d", s), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(s), 99))
			var schedule []kind
			for range *perSeed {
				schedule = append(schedule, kinds[rng.IntN(len(kinds))])
			}
			out, n, l, nc := runSchedule(t, uint64(s), schedule, net)
			all = append(all, out...)
			ops, lost, never = ops+n, lost+l, never+nc
		})
	}
	summary(t, all)
	t.Logf("%d seeds: %d operations, %d acknowledged writes lost, %d operations never completed after healing", *seeds, ops, lost, never)
}
