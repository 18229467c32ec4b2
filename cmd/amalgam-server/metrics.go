package main

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amalgam-store/amalgam/runtime"
)

// nodeCollector reports, when scraped, every hosted node's pending
// operations and bytes stored, read from the nodes' own state.
type nodeCollector struct {
	pending, bytes *prometheus.Desc

	mu       sync.Mutex
	machines []*runtime.Machine
}

func newNodeCollector() *nodeCollector {
	return &nodeCollector{
		pending: prometheus.NewDesc("amalgam_pending_operations",
			"Operations a data server has in pending_ops (prepared, not yet acknowledged by every backup), or PREPAREs a parity server or witness holds.",
			[]string{"node"}, nil),
		bytes: prometheus.NewDesc("amalgam_bytes_stored",
			"Bytes of blocks a node stores: data blocks on a data server, parity blocks on a parity server (blocks never written are not stored).",
			[]string{"node"}, nil),
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
	ch <- c.pending
	ch <- c.bytes
}

// Collect implements prometheus.Collector.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ms := append([]*runtime.Machine(nil), c.machines...)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, m := range ms {
		for _, s := range m.NodeStats(ctx) {
			ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.PendingOps), string(s.Addr))
			ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(s.BytesStored), string(s.Addr))
		}
	}
}
