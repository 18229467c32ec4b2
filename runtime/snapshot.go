package runtime

import (
	"bytes"
	"cmp"
	"context"
	"encoding/gob"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

// Snapshots for online checking (docs/model-checking.md, "Online
// checking"). A node's loop captures its part between two batches: a
// clone of the node, its incarnation, and its streams' positions (the
// outgoing streams' numbering and unacknowledged messages, the incoming
// streams' last applied number). Serialising the clone (its Persist
// output, written from scratch) happens outside the loop, so a snapshot
// holds a loop up for one Clone at most.

// Snapshot is one machine's nodes at one moment each.
type Snapshot struct {
	Cluster string // ClusterID
	Layout  erasure.Layout
	Taken   time.Time
	Nodes   []NodeSnapshot // by address
}

// NodeSnapshot is one node between two batches.
type NodeSnapshot struct {
	Addr        node.Addr
	Incarnation uint64
	Hash        uint64            // the node's Hash at the cut
	Held        time.Duration     // how long capturing held the loop up
	State       map[string][]byte // what its Persist writes from scratch; nil if it does not persist
	Out         []OutSnapshot     // by receiver
	In          []InSnapshot      // by sender
}

// OutSnapshot is an outgoing stream: its id, the next number it would
// give, and the messages the receiver has not acknowledged.
type OutSnapshot struct {
	To     node.Addr
	Stream uint64
	Next   uint64
	Queue  []Queued
}

// Queued is a numbered stream message (a marshalled wire.Message).
type Queued struct {
	Seq uint64
	Msg []byte
}

// InSnapshot is an incoming stream: its id and the last number the node
// handled (and committed).
type InSnapshot struct {
	From    node.Addr
	Stream  uint64
	Applied uint64
}

// SnapshotLimits bound what snapshots cost a machine.
type SnapshotLimits struct {
	// MaxBytes bounds a snapshot's encoded size (default 256 MiB).
	MaxBytes int
	// MinInterval is the least time between two snapshots of a node
	// (default 100ms); requests sooner are refused.
	MinInterval time.Duration
}

// Default snapshot limits.
const (
	DefaultSnapshotMaxBytes    = 256 << 20
	DefaultSnapshotMinInterval = 100 * time.Millisecond
)

func (l SnapshotLimits) withDefaults() SnapshotLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultSnapshotMaxBytes
	}
	if l.MinInterval <= 0 {
		l.MinInterval = DefaultSnapshotMinInterval
	}
	return l
}

// loopCut is what a loop captures between batches.
type loopCut struct {
	clone node.Node
	snap  NodeSnapshot
}

// snapshots is a loop's pending snapshot requests and rate limit.
type snapshots struct {
	mu   sync.Mutex
	want []chan loopCut
	last time.Time
}

// serveSnapshots answers the pending snapshot requests. Loop goroutine
// only, between batches.
func (l *loop) serveSnapshots() {
	l.snaps.mu.Lock()
	want := l.snaps.want
	l.snaps.want = nil
	l.snaps.mu.Unlock()
	if len(want) == 0 {
		return
	}
	start := time.Now()
	// The cut is of released batches: with a synced store, apply the
	// carried ones and wait for those in the pipe (at most a few fsyncs).
	l.flushCarry()
	l.piped.waitZero(l.h.ctx)
	c := loopCut{clone: l.n.Clone()}
	ns := &c.snap
	ns.Addr, ns.Incarnation, ns.Hash = l.addr, l.inc.Load(), l.n.Hash()
	for to, o := range l.out {
		o.mu.Lock()
		os := OutSnapshot{To: to, Stream: o.sid, Next: o.next}
		for _, e := range o.q {
			b, err := proto.Marshal(e.m)
			if err != nil {
				panic(err)
			}
			os.Queue = append(os.Queue, Queued{e.seq, b})
		}
		o.mu.Unlock()
		ns.Out = append(ns.Out, os)
	}
	l.mu.Lock()
	for from, s := range l.in {
		s.mu.Lock()
		ns.In = append(ns.In, InSnapshot{From: from, Stream: s.sid, Applied: s.persisted})
		s.mu.Unlock()
	}
	l.mu.Unlock()
	slices.SortFunc(ns.Out, func(a, b OutSnapshot) int { return cmp.Compare(a.To, b.To) })
	slices.SortFunc(ns.In, func(a, b InSnapshot) int { return cmp.Compare(a.From, b.From) })
	ns.Held = time.Since(start)
	for _, ch := range want {
		ch <- c
	}
}

// snapshot asks the loop for its cut and waits for it.
func (l *loop) snapshot(ctx context.Context, lim SnapshotLimits) (NodeSnapshot, error) {
	l.snaps.mu.Lock()
	if time.Since(l.snaps.last) < lim.MinInterval {
		l.snaps.mu.Unlock()
		return NodeSnapshot{}, fmt.Errorf("snapshot of %s refused: less than %v since the last one", l.addr, lim.MinInterval)
	}
	l.snaps.last = time.Now()
	ch := make(chan loopCut, 1)
	l.snaps.want = append(l.snaps.want, ch)
	l.snaps.mu.Unlock()
	// An empty batch wakes an idle loop; the cut is taken after it.
	if err := l.post(ctx, event{fn: func(node.Context, node.Node) {}}); err != nil {
		return NodeSnapshot{}, err
	}
	var c loopCut
	select {
	case c = <-ch:
	case <-ctx.Done():
		return NodeSnapshot{}, ctx.Err()
	}
	if p, ok := c.clone.(node.Persistent); ok {
		d := node.Disk{}
		p.TrackChanges()
		p.Persist(d)
		c.snap.State = d
	}
	return c.snap, nil
}

// Snapshot captures every node of the host (each between two of its
// batches, all loops concurrently), tagged with cluster.
func (h *Host) Snapshot(ctx context.Context, cluster string, lim SnapshotLimits) (*Snapshot, error) {
	return h.snapshot(ctx, &Snapshot{Cluster: cluster}, lim)
}

// Snapshot captures the machine's nodes (Host.Snapshot) with its cluster
// identity and layout.
func (mc *Machine) Snapshot(ctx context.Context, lim SnapshotLimits) (*Snapshot, error) {
	l := mc.cl.Config.Layout
	return mc.snapshot(ctx, &Snapshot{Cluster: ClusterID(l), Layout: l}, lim)
}

func (h *Host) snapshot(ctx context.Context, snap *Snapshot, lim SnapshotLimits) (*Snapshot, error) {
	lim = lim.withDefaults()
	h.mu.Lock()
	loops := make([]*loop, 0, len(h.loops))
	for _, l := range h.loops {
		loops = append(loops, l)
	}
	h.mu.Unlock()
	snap.Taken, snap.Nodes = time.Now(), make([]NodeSnapshot, len(loops))
	errs := make([]error, len(loops))
	var wg sync.WaitGroup
	for i, l := range loops {
		wg.Go(func() {
			snap.Nodes[i], errs[i] = l.snapshot(ctx, lim)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(snap.Nodes, func(a, b NodeSnapshot) int { return cmp.Compare(a.Addr, b.Addr) })
	return snap, nil
}

// EncodeSnapshot gob-encodes s, refusing more than max bytes (0: no bound).
func EncodeSnapshot(s *Snapshot, max int) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(s); err != nil {
		return nil, err
	}
	if max > 0 && b.Len() > max {
		return nil, fmt.Errorf("snapshot is %d bytes, over the %d-byte budget", b.Len(), max)
	}
	return b.Bytes(), nil
}

// DecodeSnapshot reads what EncodeSnapshot wrote.
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	var s Snapshot
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return nil, fmt.Errorf("not a snapshot: %v", err)
	}
	return &s, nil
}

// ClusterID identifies a cluster by its layout and initial machines'
// count: snapshots of another cluster are refused.
func ClusterID(l erasure.Layout) string {
	return fmt.Sprintf("n%d-g%d-f%d-w%d-s%d-b%d", l.N, l.G, l.F, l.W, l.Stripes, l.BlockSize)
}

// onlineServer serves wire.Online for a machine: snapshots and steering.
type onlineServer struct {
	wire.UnimplementedOnlineServer
	mc  *Machine
	lim SnapshotLimits
}

// snapshotChunk is the size of the Snapshot RPC's chunks.
const snapshotChunk = 256 << 10

func (s onlineServer) Snapshot(req *wire.SnapshotRequest, st grpc.ServerStreamingServer[wire.SnapshotChunk]) error {
	id := ClusterID(s.mc.cl.Config.Layout)
	if c := req.GetCluster(); c != "" && c != id {
		return status.Errorf(codes.FailedPrecondition, "cluster: this machine is in cluster %s, not %s", id, c)
	}
	snap, err := s.mc.Snapshot(st.Context(), s.lim)
	if err != nil {
		return status.Errorf(codes.Unavailable, "%v", err)
	}
	b, err := EncodeSnapshot(snap, s.lim.withDefaults().MaxBytes)
	if err != nil {
		return status.Errorf(codes.ResourceExhausted, "%v", err)
	}
	for len(b) > 0 {
		n := min(len(b), snapshotChunk)
		if err := st.Send(&wire.SnapshotChunk{Cluster: id, Data: b[:n]}); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// registerOnline adds the Online service to the machine's server,
// then what register adds.
func (mc *Machine) registerOnline(register func(*grpc.Server)) func(*grpc.Server) {
	return func(s *grpc.Server) {
		wire.RegisterOnlineServer(s, onlineServer{mc: mc})
		if register != nil {
			register(s)
		}
	}
}

// pipeCount counts a loop's batches persisted and not yet released.
type pipeCount struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil while n is 0
}

func (p *pipeCount) add(d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += d
	if p.n > 0 && p.zero == nil {
		p.zero = make(chan struct{})
	}
	if p.n == 0 && p.zero != nil {
		close(p.zero)
		p.zero = nil
	}
}

// waitZero waits until no batch is in the pipe, or ctx ends.
func (p *pipeCount) waitZero(ctx context.Context) {
	p.mu.Lock()
	z := p.zero
	p.mu.Unlock()
	if z == nil {
		return
	}
	select {
	case <-z:
	case <-ctx.Done():
	}
}
