package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
)

// status: the cluster's layout, machines and servers, with each server's
// rebuild progress. Percentages come from one sample (blocks not rebuilt
// out of the blocks the server holds); MB/s and ETA from two samples of
// the degraded counts, taken --sample apart (or, with --watch, from the
// first sample of the current rebuild to the latest). The protocol servers
// only count; all timing is here.

type statusNodeJSON struct {
	Addr           string `json:"addr"`
	NextOpNum      uint64 `json:"next_op_num,omitempty"`
	PendingOps     int64  `json:"pending_ops"`
	BlocksStored   int64  `json:"blocks_stored"`
	BytesStored    int64  `json:"bytes_stored"`
	Incarnation    uint64 `json:"incarnation"`
	ConfigNum      uint64 `json:"config_num"`
	DegradedBlocks int64  `json:"degraded_blocks"`
	// Blocks is how many blocks the server holds in the layout;
	// RebuiltPercent the share of them rebuilt.
	Blocks         int64   `json:"blocks"`
	RebuiltPercent float64 `json:"rebuilt_percent"`
	// RebuildMBps (10^6 bytes/s) and ETASeconds are measured over two
	// samples while the server rebuilds; absent when not measured (not
	// rebuilding, one sample, or no progress yet).
	RebuildMBps *float64 `json:"rebuild_mb_per_s,omitempty"`
	ETASeconds  *float64 `json:"eta_seconds,omitempty"`
}

type statusDoc struct {
	Cluster string `json:"cluster"`
	// Protocol is amalgam, shardedpaxos or rspaxos (amalgam-server dev
	// --protocol).
	Protocol   string              `json:"protocol"`
	ConfigNum  uint64              `json:"config_num"`
	Durability string              `json:"durability"`
	Layout     layoutDoc           `json:"layout"`
	Machines   []statusMachineJSON `json:"machines"`
	Nodes      []statusNodeJSON    `json:"nodes"`
	Spares     []string            `json:"spares"`
	// Suspected: the machine slots the reconfiguration leader suspects
	// and has not moved to a spare (their state is "suspected").
	Suspected []int `json:"suspected"`
	// Healthy: every server answers, is in the newest configuration and
	// has rebuilt all its blocks.
	Healthy bool `json:"healthy"`
	assessment

	layout  erasure.Layout
	servers int
	at      time.Time
}

// fetchStatus takes one sample.
func fetchStatus(ctx context.Context, c *client.Client, cluster string) (*statusDoc, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return nil, err
	}
	l := c.Layout()
	doc := &statusDoc{Cluster: cluster, ConfigNum: st.GetConfigNum(), Durability: st.GetDurability(), Layout: layoutJSON(l),
		Spares: append([]string{}, st.GetSpares()...), Suspected: []int{}, layout: l, at: time.Now()}
	doc.Layout.Rows = nil
	doc.Protocol = st.GetProtocol()
	if doc.Protocol == "" {
		doc.Protocol = runtime.Amalgam
	}
	doc.servers = 2 * len(st.GetMachines())
	if l.W > 0 {
		doc.servers += len(st.GetMachines())
	}
	if doc.Protocol != runtime.Amalgam {
		b, err := runtime.NewBaseline(doc.Protocol, l, paxos.Timing{})
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %v", cluster, err)
		}
		doc.servers = l.N * b.Members()
	}
	doc.Healthy = len(st.GetNodes()) == doc.servers
	for _, n := range st.GetNodes() {
		nj := statusNodeJSON{Addr: n.GetAddr(), NextOpNum: n.GetNextOpNum(), PendingOps: n.GetPendingOps(),
			BlocksStored: n.GetBlocksStored(), BytesStored: n.GetBytesStored(), Incarnation: n.GetIncarnation(), ConfigNum: n.GetConfigNum(),
			DegradedBlocks: n.GetDegradedBlocks()}
		nj.Blocks = serverBlocks(l, nj.Addr)
		nj.RebuiltPercent = 100
		if nj.Blocks > 0 {
			nj.RebuiltPercent = 100 * float64(max(nj.Blocks-nj.DegradedBlocks, 0)) / float64(nj.Blocks)
		}
		doc.Nodes = append(doc.Nodes, nj)
		doc.Healthy = doc.Healthy && nj.ConfigNum == doc.ConfigNum && nj.DegradedBlocks == 0
	}
	if doc.Protocol != runtime.Amalgam {
		for _, m := range st.GetMachines() {
			doc.Machines = append(doc.Machines, statusMachineJSON{Index: int(m.GetIndex()), Addr: m.GetAddr()})
		}
		doc.Problems = []string{}
		if !doc.Healthy {
			doc.Problems = append(doc.Problems, fmt.Sprintf("%d of %d replicas answered", len(doc.Nodes), doc.servers))
		}
		return doc, nil
	}
	for _, m := range st.GetSuspected() {
		doc.Suspected = append(doc.Suspected, int(m))
	}
	doc.Machines = machineViews(l, doc.ConfigNum, st.GetMachines(), doc.Nodes, doc.Suspected)
	doc.assessment = assess(l, doc.Machines, len(doc.Spares))
	for _, m := range doc.Machines {
		doc.Healthy = doc.Healthy && m.State == stateUp
	}
	if !doc.Healthy && len(doc.Problems) == 0 {
		doc.Problems = append(doc.Problems, "servers missing, behind the newest configuration, or rebuilding")
	}
	return doc, nil
}

// serverBlocks is the number of blocks the server at addr holds.
func serverBlocks(l erasure.Layout, addr string) int64 {
	role, m, err := msg.ParseAddr(node.Addr(addr))
	if err != nil || m >= l.N {
		return 0
	}
	switch role {
	case "data":
		return int64(len(l.StripesAs(m, erasure.RoleData)))
	case "parity":
		return int64(len(l.StripesAs(m, erasure.RoleParity)))
	}
	return 0
}

// rebuilding reports whether some server has blocks to rebuild.
func (d *statusDoc) rebuilding() bool {
	for _, n := range d.Nodes {
		if n.DegradedBlocks > 0 {
			return true
		}
	}
	return false
}

// measure fills in the rebuild rate and ETA of the servers rebuilding in
// cur, from an earlier sample of the same incarnations.
func measure(first map[string]statusNodeJSON, firstAt map[string]time.Time, cur *statusDoc) {
	bs := float64(cur.layout.BlockSize)
	for i := range cur.Nodes {
		n := &cur.Nodes[i]
		f, ok := first[n.Addr]
		if !ok || f.Incarnation != n.Incarnation || n.DegradedBlocks == 0 {
			continue
		}
		dt := cur.at.Sub(firstAt[n.Addr]).Seconds()
		done := f.DegradedBlocks - n.DegradedBlocks
		if dt <= 0 || done <= 0 {
			continue
		}
		perSec := float64(done) / dt
		mbps := perSec * bs / 1e6
		eta := float64(n.DegradedBlocks) / perSec
		n.RebuildMBps, n.ETASeconds = &mbps, &eta
	}
}

// sampler keeps, per server, the first sample of its current rebuild.
type sampler struct {
	first   map[string]statusNodeJSON
	firstAt map[string]time.Time
}

func newSampler() *sampler {
	return &sampler{first: map[string]statusNodeJSON{}, firstAt: map[string]time.Time{}}
}

func (s *sampler) add(d *statusDoc) {
	for _, n := range d.Nodes {
		f, ok := s.first[n.Addr]
		if !ok || f.Incarnation != n.Incarnation || n.DegradedBlocks > f.DegradedBlocks || n.DegradedBlocks == 0 {
			s.first[n.Addr], s.firstAt[n.Addr] = n, d.at
		}
	}
	measure(s.first, s.firstAt, d)
}

func printStatus(w io.Writer, doc *statusDoc) {
	if doc.Protocol != runtime.Amalgam {
		printBaselineStatus(w, doc)
		return
	}
	l := doc.layout
	fmt.Fprintf(w, "cluster %s, configuration %d, durability %s\n", doc.Cluster, doc.ConfigNum, doc.Durability)
	fmt.Fprintf(w, "layout: n=%d g=%d f=%d w=%d, %d stripes, %d blocks of %d bytes, storage overhead f/g=%.2f\n",
		l.N, l.G, l.F, l.W, l.Stripes, l.NumBlocks(), l.BlockSize, overhead(l))
	printMachines(w, l, doc.Machines)
	for _, n := range doc.Nodes {
		if n.DegradedBlocks > 0 {
			fmt.Fprintf(w, "%s: %d blocks to rebuild, %s\n", n.Addr, n.DegradedBlocks, progressText(n))
		}
	}
	if len(doc.Spares) > 0 {
		fmt.Fprintf(w, "spares: %s\n", strings.Join(doc.Spares, ", "))
	} else {
		fmt.Fprintln(w, "spares: none")
	}
	fmt.Fprintf(w, "every stripe keeps g=%d of its %d blocks with up to %d more machines down; one more failure: %s\n", l.G, l.G+l.F, max(doc.CanLose, 0), doc.OneMore)
	for _, p := range doc.Problems {
		fmt.Fprintf(w, "degraded: %s\n", p)
	}
	if doc.Healthy {
		fmt.Fprintln(w, "healthy")
	} else {
		fmt.Fprintln(w, "not healthy")
	}
}

// printBaselineStatus prints a ShardedPaxos or RSPaxos cluster: its
// machines and the bytes each replica stores.
func printBaselineStatus(w io.Writer, doc *statusDoc) {
	l := doc.layout
	fmt.Fprintf(w, "cluster %s, protocol %s, durability %s\n", doc.Cluster, doc.Protocol, doc.Durability)
	fmt.Fprintf(w, "layout: %d groups, f=%d, %d blocks of %d bytes\n", l.N, l.F, l.NumBlocks(), l.BlockSize)
	for _, m := range doc.Machines {
		fmt.Fprintf(w, "machine %d at %s\n", m.Index, m.Addr)
	}
	var total int64
	for _, n := range doc.Nodes {
		fmt.Fprintf(w, "  %-10s bytes stored %d\n", n.Addr, n.BytesStored)
		total += n.BytesStored
	}
	fmt.Fprintf(w, "%d of %d replicas answered, storing %d bytes\n", len(doc.Nodes), doc.servers, total)
	if doc.Healthy {
		fmt.Fprintln(w, "healthy")
	} else {
		fmt.Fprintln(w, "not healthy: replicas missing")
	}
}

// progressText is a rebuilding server's progress: percent, rate and ETA.
func progressText(n statusNodeJSON) string {
	s := fmt.Sprintf("%.1f%% rebuilt", n.RebuiltPercent)
	if n.RebuildMBps != nil {
		s += fmt.Sprintf(", %.2f MB/s, ETA %s", *n.RebuildMBps, (time.Duration(*n.ETASeconds * float64(time.Second))).Round(time.Second))
	} else {
		s += ", rate not measured yet"
	}
	return s
}

func newStatusCmd(gl *globalFlags) *cobra.Command {
	var (
		watch    bool
		interval time.Duration
		sample   time.Duration
		exitZero bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each machine's state, what is degraded and why, and rebuild progress",
		Long: `status shows the cluster as an operator needs it: a table of machines with
their servers, state (up; down: no answer; suspected: the reconfiguration
leader hears no heartbeat from it and has not moved it to a spare; behind: in
an older configuration; replaced: an older incarnation, fenced; rebuilding,
with the percent done),
incarnations (data/parity[/witness]) and bytes stored; then what is degraded
and why, whether a spare is registered, and what one more failure would mean.

While something rebuilds, a second sample --sample later measures each
rebuilding server's rate (MB/s) and time left. It exits with status 2 when the
cluster is not healthy (--exit-zero: 0), 1 on errors.

With --watch it samples every --interval until Ctrl-C: a line whenever the
health changes and a progress bar while something rebuilds (JSON: one
document per sample).

Examples:
  amalgam-cli status
  amalgam-cli status --output json | jq '.machines[] | select(.state != "up")'
  amalgam-cli status --watch --interval 2s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval <= 0 {
				return fmt.Errorf("--interval must be positive, got %v", interval)
			}
			if sample < 0 {
				return fmt.Errorf("--sample must not be negative, got %v", sample)
			}
			return withCluster(cmd, gl, func(_ context.Context, c *client.Client) error {
				get := func(ctx context.Context) (*statusDoc, error) {
					ctx, cancel := context.WithTimeout(ctx, gl.timeout)
					defer cancel()
					return fetchStatus(ctx, c, gl.cluster)
				}
				w := cmd.OutOrStdout()
				if watch {
					return watchStatus(cmd, gl, w, get, interval)
				}
				doc, err := get(cmd.Context())
				if err != nil {
					return err
				}
				if sample > 0 && doc.rebuilding() {
					s := newSampler()
					s.add(doc)
					select {
					case <-time.After(sample):
					case <-cmd.Context().Done():
						return cmd.Context().Err()
					}
					if doc, err = get(cmd.Context()); err != nil {
						return err
					}
					s.add(doc)
				}
				if gl.output == "json" {
					err = writeJSON(w, doc)
				} else {
					printStatus(w, doc)
				}
				if err == nil && !doc.Healthy && !exitZero {
					err = unhealthy(doc.Problems)
				}
				return err
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&watch, "watch", false, "keep sampling every --interval until Ctrl-C")
	f.DurationVar(&interval, "interval", time.Second, "sampling interval with --watch")
	f.DurationVar(&sample, "sample", time.Second, "while something rebuilds, sample again after this long to measure MB/s and ETA (0: do not)")
	f.BoolVar(&exitZero, "exit-zero", false, "exit 0 even when the cluster is not healthy")
	return cmd
}

// watchStatus samples until Ctrl-C: a line whenever the health summary
// changes, and one progress bar for a rebuild (blocks rebuilt out of the
// blocks of the servers rebuilding) with each server's progress in its
// description. A failed sample is reported and sampling goes on.
func watchStatus(cmd *cobra.Command, gl *globalFlags, w io.Writer, get func(context.Context) (*statusDoc, error), interval time.Duration) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	s := newSampler()
	var bar *progressbar.ProgressBar
	var barMax int64
	endBar := func() {
		if bar != nil {
			_ = bar.Finish()
			fmt.Fprintln(w)
			bar = nil
		}
	}
	defer endBar()
	last := ""
	for {
		doc, err := get(ctx)
		if ctx.Err() != nil {
			return nil // Ctrl-C
		}
		summary := "healthy"
		switch {
		case err != nil:
			summary = "error: " + oneLine(err).Error()
		case !doc.Healthy:
			summary = "not healthy: " + strings.Join(doc.Problems, "; ")
		}
		if err == nil {
			s.add(doc)
		}
		switch {
		case gl.output == "json" && err == nil:
			if err := writeJSON(w, doc); err != nil {
				return err
			}
		case gl.output == "json":
			if err := writeJSON(w, errorJSON{Error: summary}); err != nil {
				return err
			}
		default:
			if summary != last {
				endBar()
				fmt.Fprintf(w, "%s %s\n", time.Now().Format(time.TimeOnly), summary)
			}
			if err == nil && doc.rebuilding() {
				var total, left int64
				var parts []string
				for _, n := range doc.Nodes {
					if n.DegradedBlocks > 0 {
						total += n.Blocks
						left += n.DegradedBlocks
						parts = append(parts, n.Addr+" "+progressText(n))
					}
				}
				if bar == nil || total != barMax {
					endBar()
					barMax = max(total, 1)
					bar = progressbar.NewOptions64(barMax, progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(30),
						progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(false))
				}
				bar.Describe("rebuilding: " + strings.Join(parts, "; "))
				_ = bar.Set64(total - left)
			} else {
				endBar()
			}
		}
		last = summary
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return nil
		}
	}
}
