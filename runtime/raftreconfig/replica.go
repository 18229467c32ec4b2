// Package raftreconfig runs the reconfiguration service (reconfig.Service,
// a deterministic node) in production, replicated with Raft
// (go.etcd.io/raft/v3, RawNode). The node's inputs (the protocol messages
// it receives and the timer firings that change its state) and the changes
// of the address book are entries of the Raft log; every replica applies
// them in order, and the leader performs the node's side effects (its
// sends and timers). The log, hard state and snapshots are in pebble. See
// docs/reconfiguration.md.
package raftreconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// Options configure one replica.
type Options struct {
	// ID is this replica's Raft id (at least 1); Peers maps every
	// replica's id, this one's included, to its host:port.
	ID    uint64
	Peers map[uint64]string
	// Listener serves gRPC: the Raft transport, the reconfiguration API,
	// the client API's Status and the protocol transport.
	Listener net.Listener
	// Dir holds the Raft log in pebble; "" keeps it in memory (tests).
	Dir string
	// NoSync skips fsync on log writes (tests on a shared machine).
	NoSync  bool
	Initial Initial
	Logger  *slog.Logger
	// ServerOptions, DialOptions and Register as in runtime.Options.
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	Register      func(*grpc.Server)
	// Tick is the Raft tick (default 100ms); elections time out after
	// ElectionTicks ticks (default 10) and leaders heartbeat every tick.
	Tick          time.Duration
	ElectionTicks int
	// SnapshotEvery is how many applied entries trigger a snapshot and log
	// compaction (default 1000); SnapshotKeep entries stay in the log so
	// that a follower slightly behind catches up without a snapshot
	// (default 100).
	SnapshotEvery uint64
	SnapshotKeep  uint64
	// ProposalTimeout bounds waiting for a proposal to apply before it is
	// proposed again (default 3s).
	ProposalTimeout time.Duration
	// SuspectAfter is how long a machine may go without a heartbeat before
	// the leader replaces it by a live spare; 0 turns suspicion off. The
	// leader's failure detector (reconfig.Failover) runs rounds of a fifth
	// of it.
	SuspectAfter time.Duration
}

// Replica is one running replica.
type Replica struct {
	o    Options
	log  *slog.Logger
	host *runtime.Host
	disk *disk // nil in memory

	// Loop goroutine only.
	storage   *raft.MemoryStorage
	rn        *raft.RawNode
	sm        *stateMachine
	confState pb.ConfState
	applied   uint64
	snapIndex uint64
	leader    bool
	lead      uint64
	epoch     uint64 // leaderships of this replica: timers of older ones are dropped
	armed     map[uint64]bool
	waiters   map[uint64]chan error
	applied1  []uint64           // proposals applied in this Ready: woken after publish
	fo        *reconfig.Failover // the leader's failure detector; nil at followers
	foVersion uint64             // the address book version fo last saw
	suspected []int              // fo's suspected slots, as last logged
	lastTick  time.Time

	events chan func()
	stop   chan struct{}
	done   chan struct{}
	peers  map[uint64]*peer
	pub    atomic.Pointer[published]
	// SnapshotsReceived counts the snapshots this replica installed from a
	// leader.
	snapsIn atomic.Int64
	wg      sync.WaitGroup
}

// published is what other goroutines read, copied by the loop after every
// Ready.
type published struct {
	dir        *wire.Directory
	history    []msg.Config
	busy       bool
	postponed  []msg.Replace // queued replacements SLC holds back
	degraded   []node.Addr   // replaced servers not yet rebuilt
	suspected  []int         // slots the leader's detector suspects
	leader     bool
	leaderAddr string
	applied    uint64
}

var errNotLeader = errors.New("not the leader")

// Start starts a replica.
func Start(o Options) (*Replica, error) {
	if o.ID == 0 || o.Peers[o.ID] == "" {
		return nil, fmt.Errorf("raftreconfig: id %d is not among the peers %v", o.ID, o.Peers)
	}
	if o.Tick <= 0 {
		o.Tick = 100 * time.Millisecond
	}
	if o.ElectionTicks <= 0 {
		o.ElectionTicks = 10
	}
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = 1000
	}
	if o.SnapshotKeep == 0 {
		o.SnapshotKeep = 100
	}
	if o.ProposalTimeout <= 0 {
		o.ProposalTimeout = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Replica{o: o, log: o.Logger.With("replica", o.ID), storage: raft.NewMemoryStorage(), armed: map[uint64]bool{},
		waiters: map[uint64]chan error{}, events: make(chan func(), 4096), stop: make(chan struct{}), done: make(chan struct{}),
		peers: map[uint64]*peer{}}
	if err := r.open(); err != nil {
		if r.disk != nil {
			_ = r.disk.close()
		}
		return nil, err
	}
	r.host = runtime.NewHost(runtime.Options{Listener: o.Listener, Resolve: r.resolve, BlockSize: o.Initial.Config.Layout.BlockSize,
		Logger: r.log, ServerOptions: o.ServerOptions, DialOptions: o.DialOptions, Inbound: r.inbound,
		Register: func(s *grpc.Server) {
			wire.RegisterReconfigServer(s, &api{r: r})
			if o.Register != nil {
				o.Register(s)
			}
		}})
	r.host.SetClientServer(&clientAPI{r: r})
	for id, addr := range o.Peers {
		if id != o.ID {
			r.peers[id] = newPeer(r, id, addr)
		}
	}
	r.publish()
	r.host.Start()
	for _, p := range r.peers {
		r.wg.Go(p.run)
	}
	go r.run()
	return r, nil
}

// open restores the log and the state machine, or bootstraps them.
func (r *Replica) open() error {
	o := r.o
	sm, _ := newStateMachine(o.Initial)
	r.sm = sm
	var hs pb.HardState
	var snap pb.Snapshot
	var ents []pb.Entry
	if o.Dir != "" {
		d, err := openDisk(o.Dir, !o.NoSync)
		if err != nil {
			return err
		}
		r.disk = d
		fp := o.Initial.fingerprint()
		old, ok, err := d.get(initKey)
		if err != nil {
			return err
		}
		if ok && !bytes.Equal(old, fp) {
			return fmt.Errorf("raftreconfig: %s holds a replica started with another layout or machine list (%s); start it with the same flags", o.Dir, old)
		}
		if !ok {
			if err := d.set(initKey, fp); err != nil {
				return err
			}
		}
		if hs, snap, ents, err = d.load(); err != nil {
			return fmt.Errorf("raftreconfig: reading %s: %w", o.Dir, err)
		}
	}
	if !raft.IsEmptySnap(snap) {
		if err := r.storage.ApplySnapshot(snap); err != nil {
			return err
		}
		sm, _, err := restoreStateMachine(snap.Data)
		if err != nil {
			return fmt.Errorf("raftreconfig: snapshot at %d: %w", snap.Metadata.Index, err)
		}
		r.sm = sm
		r.confState = snap.Metadata.ConfState
		r.applied, r.snapIndex = snap.Metadata.Index, snap.Metadata.Index
	}
	if !raft.IsEmptyHardState(hs) {
		if err := r.storage.SetHardState(hs); err != nil {
			return err
		}
	}
	if err := r.storage.Append(ents); err != nil {
		return err
	}
	rn, err := raft.NewRawNode(&raft.Config{ID: o.ID, ElectionTick: o.ElectionTicks, HeartbeatTick: 1, Storage: r.storage,
		Applied: r.applied, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
		Logger: raftLogger{r.log}})
	if err != nil {
		return err
	}
	r.rn = rn
	if raft.IsEmptyHardState(hs) && raft.IsEmptySnap(snap) && len(ents) == 0 {
		var peers []raft.Peer
		for id := range o.Peers {
			peers = append(peers, raft.Peer{ID: id})
		}
		sort.Slice(peers, func(i, j int) bool { return peers[i].ID < peers[j].ID })
		if err := rn.Bootstrap(peers); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the replica.
func (r *Replica) Close() {
	select {
	case <-r.stop:
		return
	default:
	}
	close(r.stop)
	<-r.done
	r.host.Stop()
	r.wg.Wait()
	if r.disk != nil {
		_ = r.disk.close()
	}
}

// Addr is where the replica serves.
func (r *Replica) Addr() string { return r.host.Addr() }

// Leader reports whether this replica leads.
func (r *Replica) Leader() bool { return r.pub.Load().leader }

// Config is the newest configuration this replica applied.
func (r *Replica) Config() msg.Config {
	h := r.pub.Load().history
	return h[len(h)-1]
}

// History is every configuration this replica applied, oldest first.
func (r *Replica) History() []msg.Config { return r.pub.Load().history }

// Directory is the address book as this replica applied it.
func (r *Replica) Directory() *wire.Directory { return r.pub.Load().dir }

// SnapshotsReceived counts the snapshots this replica installed from a
// leader.
func (r *Replica) SnapshotsReceived() int64 { return r.snapsIn.Load() }

// Busy reports whether a replacement is in progress or queued.
func (r *Replica) Busy() bool { return r.pub.Load().busy }

// Postponed lists the queued replacements that the service holds back
// because a stripe of the server already has f degraded blocks (SLC).
func (r *Replica) Postponed() []msg.Replace { return r.pub.Load().postponed }

// Degraded lists the data and parity servers replaced and not yet rebuilt.
func (r *Replica) Degraded() []node.Addr { return r.pub.Load().degraded }

// do runs fn on the loop goroutine.
func (r *Replica) do(fn func()) bool {
	select {
	case r.events <- fn:
		return true
	case <-r.stop:
		return false
	}
}

func (r *Replica) run() {
	defer close(r.done)
	tick := time.NewTicker(r.o.Tick)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
			r.rn.Tick()
			r.noteTick(time.Now())
		case fn := <-r.events:
			fn()
		}
		r.ready()
	}
}

// ready follows the Ready contract: persist the hard state, entries and
// snapshot, then send the messages, then apply the committed entries.
func (r *Replica) ready() {
	for r.rn.HasReady() {
		rd := r.rn.Ready()
		if rd.SoftState != nil {
			r.setLeader(rd.SoftState.RaftState == raft.StateLeader, rd.SoftState.Lead)
		}
		if r.disk != nil {
			if err := r.disk.save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
				// The log is ahead of the disk: stop rather than send.
				panic(fmt.Sprintf("raftreconfig: replica %d: writing the log: %v", r.o.ID, err))
			}
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			if err := r.storage.ApplySnapshot(rd.Snapshot); err != nil {
				panic(err)
			}
			sm, _, err := restoreStateMachine(rd.Snapshot.Data)
			if err != nil {
				panic(fmt.Sprintf("raftreconfig: replica %d: snapshot from the leader: %v", r.o.ID, err))
			}
			r.snapsIn.Add(1)
			r.log.Info("installed a snapshot from the leader", "index", rd.Snapshot.Metadata.Index)
			r.sm = sm
			r.confState = rd.Snapshot.Metadata.ConfState
			r.applied, r.snapIndex = rd.Snapshot.Metadata.Index, rd.Snapshot.Metadata.Index
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			_ = r.storage.SetHardState(rd.HardState)
		}
		if err := r.storage.Append(rd.Entries); err != nil {
			panic(err)
		}
		for _, m := range rd.Messages {
			if p := r.peers[m.To]; p != nil {
				p.send(m)
			}
		}
		for _, e := range rd.CommittedEntries {
			r.applyEntry(e)
		}
		r.rn.Advance(rd)
		r.maybeSnapshot()
		r.publish()
		// Only now: a proposer that reads the published state sees its entry.
		for _, id := range r.applied1 {
			if w, ok := r.waiters[id]; ok {
				w <- nil
				delete(r.waiters, id)
			}
		}
		r.applied1 = r.applied1[:0]
		r.viewFailover()
	}
}

func (r *Replica) applyEntry(e pb.Entry) {
	if e.Index <= r.applied {
		return
	}
	r.applied = e.Index
	switch e.Type {
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := cc.Unmarshal(e.Data); err == nil {
			r.confState = *r.rn.ApplyConfChange(cc)
		}
		return
	case pb.EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := cc.Unmarshal(e.Data); err == nil {
			r.confState = *r.rn.ApplyConfChange(cc)
		}
		return
	}
	if len(e.Data) == 0 {
		return // a new leader's empty entry
	}
	var en wire.ReconfigEntry
	if err := proto.Unmarshal(e.Data, &en); err != nil {
		r.log.Error("undecodable log entry", "index", e.Index, "err", err)
		return
	}
	before := r.sm.dir.GetVersion()
	eff, err := r.sm.apply(&en)
	if err != nil {
		r.log.Error("log entry not applied", "index", e.Index, "err", err)
		return
	}
	if r.sm.dir.GetVersion() != before {
		r.log.Info("address book changed", "version", r.sm.dir.GetVersion(), "hosts", r.sm.dir.GetHosts(), "spares", r.sm.dir.GetSpares())
	}
	if r.leader {
		r.perform(eff)
	}
	r.applied1 = append(r.applied1, en.GetId())
}

// perform carries out the node's effects (leader only).
func (r *Replica) perform(e *effects) {
	for _, s := range e.sends {
		r.host.Send(msg.ReconfigAddr, s.to, s.m)
	}
	for _, t := range e.timers {
		r.arm(t)
	}
}

// arm schedules a node timer at the leader, once per timer value.
func (r *Replica) arm(t timerSet) {
	h := node.HashOf(t.t)
	if r.armed[h] {
		return
	}
	r.armed[h] = true
	d := t.min
	if t.max > t.min {
		d += time.Duration(randUint64() % uint64(t.max-t.min+1))
	}
	epoch := r.epoch
	time.AfterFunc(d, func() {
		r.do(func() {
			if epoch != r.epoch || !r.leader {
				return
			}
			r.armed[h] = false
			r.fire(t.t, h)
		})
	})
}

// fire runs a node timer at the leader. A timer that leaves the node's
// state as it is only has effects, which the leader performs; one that
// changes it is proposed, so that every replica runs it.
func (r *Replica) fire(t node.Timer, h uint64) {
	c := r.sm.svc.Clone()
	e := &effects{}
	c.Timer(e, t)
	if c.Hash() == r.sm.svc.Hash() {
		r.perform(e)
		return
	}
	if _, ok := r.sm.timers[h]; !ok {
		r.log.Error("a timer that changes state was not set by an applied entry; dropped", "timer", fmt.Sprintf("%T", t))
		return
	}
	r.proposeLocal(&wire.ReconfigEntry{Body: &wire.ReconfigEntry_Timer{Timer: h}})
}

// input handles a protocol message to the reconfiguration node (leader
// only): like a timer, an input that changes no state is answered by the
// leader alone; one that does is proposed.
func (r *Replica) input(from node.Addr, m node.Message) {
	if !r.leader {
		return
	}
	c := r.sm.svc.Clone()
	e := &effects{}
	c.Handle(e, from, m)
	if c.Hash() == r.sm.svc.Hash() {
		r.perform(e)
		return
	}
	p, err := wire.MessageToProto(m)
	if err != nil {
		return
	}
	r.proposeLocal(&wire.ReconfigEntry{Body: &wire.ReconfigEntry_Input{Input: &wire.Envelope{From: string(from), To: string(msg.ReconfigAddr), Msg: p}}})
}

// proposeLocal proposes without waiting (loop goroutine). A proposal that
// is lost is harmless: the protocol re-sends what is not answered.
func (r *Replica) proposeLocal(en *wire.ReconfigEntry) {
	if en.Id == 0 {
		en.Id = randUint64()
	}
	b, err := proto.Marshal(en)
	if err != nil {
		return
	}
	if err := r.rn.Propose(b); err != nil {
		r.log.Debug("proposal dropped", "err", err)
	}
}

// propose proposes an entry and waits until it is applied here, proposing
// it again after every ProposalTimeout (entries are idempotent) until ctx
// ends. Only the leader accepts proposals.
func (r *Replica) propose(ctx context.Context, en *wire.ReconfigEntry) error {
	for {
		en.Id = randUint64()
		b, err := proto.Marshal(en)
		if err != nil {
			return err
		}
		done := make(chan error, 1)
		errc := make(chan error, 1)
		if !r.do(func() {
			if !r.leader {
				errc <- errNotLeader
				return
			}
			r.waiters[en.Id] = done
			errc <- r.rn.Propose(b)
		}) {
			return errors.New("replica stopped")
		}
		select {
		case err := <-errc:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		t := time.NewTimer(r.o.ProposalTimeout)
		select {
		case err := <-done:
			t.Stop()
			return err // nil once applied here; errNotLeader if leadership moved
		case <-ctx.Done():
			t.Stop()
			id := en.Id
			r.do(func() { delete(r.waiters, id) })
			return ctx.Err()
		case <-t.C:
			id := en.Id
			r.do(func() { delete(r.waiters, id) })
			r.log.Info("proposal not applied in time; proposing it again", "timeout", r.o.ProposalTimeout)
		}
	}
}

func (r *Replica) setLeader(leader bool, lead uint64) {
	r.lead = lead
	if leader == r.leader {
		return
	}
	r.leader = leader
	r.epoch++
	clear(r.armed)
	for id, w := range r.waiters {
		w <- errNotLeader // the proposal may or may not apply: the caller asks the new leader
		delete(r.waiters, id)
	}
	if leader {
		r.log.Info("leading the reconfiguration service", "term", r.rn.BasicStatus().Term)
		for _, t := range r.sm.timers {
			r.arm(timerSet{t: t, min: 0, max: r.o.Tick})
		}
	}
	r.startFailover()
}

func (r *Replica) maybeSnapshot() {
	if r.applied-r.snapIndex < r.o.SnapshotEvery {
		return
	}
	data, err := r.sm.snapshot()
	if err != nil {
		r.log.Error("snapshot", "err", err)
		return
	}
	snap, err := r.storage.CreateSnapshot(r.applied, &r.confState, data)
	if err != nil {
		r.log.Error("snapshot", "err", err)
		return
	}
	// Keep some entries so that a slow follower can catch up without one.
	compact := r.applied - min(r.applied-1, r.o.SnapshotKeep)
	if r.disk != nil {
		if err := r.disk.saveSnapshot(snap, compact); err != nil {
			panic(fmt.Sprintf("raftreconfig: replica %d: writing a snapshot: %v", r.o.ID, err))
		}
	}
	if err := r.storage.Compact(compact); err != nil && !errors.Is(err, raft.ErrCompacted) {
		r.log.Error("compacting", "err", err)
	}
	r.snapIndex = r.applied
	r.log.Debug("snapshot taken", "index", r.applied, "bytes", len(data))
}

func (r *Replica) publish() {
	p := &published{dir: proto.Clone(r.sm.dir).(*wire.Directory), history: r.sm.svc.History(), busy: r.sm.svc.Busy(),
		postponed: r.sm.svc.Postponed(), degraded: r.sm.svc.Degraded(), suspected: r.suspected, leader: r.leader, applied: r.applied}
	if r.lead != 0 {
		p.leaderAddr = r.o.Peers[r.lead]
	}
	r.pub.Store(p)
}

func (r *Replica) resolve(a node.Addr) (string, bool) { return resolveIn(r.pub.Load().dir, a) }

// inbound takes the protocol messages sent to the reconfiguration node.
func (r *Replica) inbound(from, to node.Addr, m node.Message) {
	if to != msg.ReconfigAddr {
		return
	}
	select {
	case r.events <- func() { r.input(from, m) }:
	default: // overloaded: unordered messages may be lost
	}
}

// randUint64 draws a non-zero number from math/rand/v2, whose generator
// each process seeds from the operating system: entry ids and timer jitter.
func randUint64() uint64 {
	for {
		if v := rand.Uint64(); v != 0 {
			return v
		}
	}
}

// raftLogger sends raft's logs to slog.
type raftLogger struct{ l *slog.Logger }

func (g raftLogger) Debug(v ...any)              { g.l.Debug(fmt.Sprint(v...)) }
func (g raftLogger) Debugf(f string, v ...any)   { g.l.Debug(fmt.Sprintf(f, v...)) }
func (g raftLogger) Info(v ...any)               { g.l.Debug(fmt.Sprint(v...)) }
func (g raftLogger) Infof(f string, v ...any)    { g.l.Debug(fmt.Sprintf(f, v...)) }
func (g raftLogger) Warning(v ...any)            { g.l.Warn(fmt.Sprint(v...)) }
func (g raftLogger) Warningf(f string, v ...any) { g.l.Warn(fmt.Sprintf(f, v...)) }
func (g raftLogger) Error(v ...any)              { g.l.Error(fmt.Sprint(v...)) }
func (g raftLogger) Errorf(f string, v ...any)   { g.l.Error(fmt.Sprintf(f, v...)) }
func (g raftLogger) Fatal(v ...any)              { panic(fmt.Sprint(v...)) }
func (g raftLogger) Fatalf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
func (g raftLogger) Panic(v ...any)              { panic(fmt.Sprint(v...)) }
func (g raftLogger) Panicf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
