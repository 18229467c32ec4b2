package main

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
)

// nodeCollector reports, when scraped, every hosted node's pending
// operations, bytes stored and rebuild progress, read from the nodes' own
// state. The nodes only count blocks left to rebuild; bytes rebuilt, rate
// and ETA come from the collector's samples at scrapes.
type nodeCollector struct {
	pending, bytes, left, rebuilt, rate, eta, held *prometheus.Desc

	mu       sync.Mutex
	machines []*runtime.Machine
	rebuilds map[node.Addr]*rebuildTrack
	now      func() time.Time
}

// rebuildTrack follows one node's rebuild across scrapes.
type rebuildTrack struct {
	inc   uint64
	last  int     // blocks left at the previous scrape
	bytes float64 // bytes rebuilt, ever (a counter)
	// The first sample of the current rebuild: when, and blocks left.
	since     time.Time
	sinceLeft int
}

func newNodeCollector() *nodeCollector {
	desc := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, []string{"node"}, nil) }
	return &nodeCollector{
		pending: desc("amalgam_pending_operations",
			"Operations a data server has in pending_ops (prepared, not yet acknowledged by every backup), or PREPAREs a parity server or witness holds."),
		bytes: desc("amalgam_bytes_stored",
			"Bytes of blocks a node stores: data blocks on a data server, parity blocks on a parity server (blocks never written are not stored)."),
		left: desc("amalgam_rebuild_blocks_left",
			"Blocks a data or parity server started by a replacement has not rebuilt yet."),
		rebuilt: desc("amalgam_rebuild_bytes_total",
			"Bytes of blocks a data or parity server rebuilt, as seen by this process's scrapes (blocks left going down)."),
		rate: desc("amalgam_rebuild_bytes_per_second",
			"While a server rebuilds: bytes rebuilt per second since the first scrape of its current rebuild."),
		eta: desc("amalgam_rebuild_eta_seconds",
			"While a server rebuilds: seconds until its blocks left are rebuilt at amalgam_rebuild_bytes_per_second."),
		held: desc("amalgam_held_requests",
			"Requests a data server holds until the blocks they need are rebuilt."),
		rebuilds: map[node.Addr]*rebuildTrack{},
		now:      time.Now,
	}
}

// watch adds machines whose nodes the collector reports.
func (c *nodeCollector) watch(ms ...*runtime.Machine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.machines = append(c.machines, ms...)
}

// Describe implements prometheus.Collector.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.bytes, c.left, c.rebuilt, c.rate, c.eta, c.held} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ms := append([]*runtime.Machine(nil), c.machines...)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, a node.Addr) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, string(a))
	}
	for _, m := range ms {
		for _, s := range m.NodeStats(ctx) {
			gauge(c.pending, float64(s.PendingOps), s.Addr)
			gauge(c.bytes, float64(s.BytesStored), s.Addr)
			if s.Addr[0] == 'w' { // witnesses hold no blocks
				continue
			}
			gauge(c.left, float64(s.DegradedBlocks), s.Addr)
			if s.Addr[0] == 'd' {
				gauge(c.held, float64(s.Held), s.Addr)
			}
			t := c.track(s)
			ch <- prometheus.MustNewConstMetric(c.rebuilt, prometheus.CounterValue, t.bytes, string(s.Addr))
			if rate, eta, ok := t.progress(c.now(), s); ok {
				gauge(c.rate, rate, s.Addr)
				gauge(c.eta, eta, s.Addr)
			}
		}
	}
}

// track updates the rebuild record of s's node with this sample.
func (c *nodeCollector) track(s runtime.NodeStat) *rebuildTrack {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.rebuilds[s.Addr]
	if t == nil {
		t = &rebuildTrack{inc: s.Incarnation, last: s.DegradedBlocks}
		c.rebuilds[s.Addr] = t
	}
	if s.Incarnation == t.inc && s.DegradedBlocks < t.last {
		t.bytes += float64(t.last-s.DegradedBlocks) * float64(s.BlockSize)
	}
	if s.Incarnation != t.inc || s.DegradedBlocks > t.last || t.since.IsZero() {
		// A new rebuild (or the first sample of one): measure from here.
		t.since, t.sinceLeft = c.now(), s.DegradedBlocks
	}
	t.inc, t.last = s.Incarnation, s.DegradedBlocks
	return t
}

// progress is the rate (bytes/s) and ETA (s) of s's current rebuild,
// measured from its first sample; ok is false when s is not rebuilding or
// nothing was rebuilt since.
func (t *rebuildTrack) progress(now time.Time, s runtime.NodeStat) (rate, eta float64, ok bool) {
	done := t.sinceLeft - s.DegradedBlocks
	secs := now.Sub(t.since).Seconds()
	if s.DegradedBlocks == 0 || done <= 0 || secs <= 0 {
		return 0, 0, false
	}
	rate = float64(done) * float64(s.BlockSize) / secs
	return rate, float64(s.DegradedBlocks) * float64(s.BlockSize) / rate, true
}
