// Package cluster assembles a whole Amalgam cluster in one process
// (amalgam-server dev, tests): the replicas of the reconfiguration service
// (runtime/raftreconfig), the machines and the spares (runtime.Machine),
// each on its own loopback gRPC port.
package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/runtime/raftreconfig"
)

// Options describe a local cluster.
type Options struct {
	Layout     erasure.Layout
	Durability string // "durable" or "memory"
	DataDir    string // reconfig-<id>, machine-<m>, spare-<i> below it
	// Addr is the entry address: the first replica of the reconfiguration
	// service. With port P, machine m listens on P+1+m, spare i on
	// P+1+n+i and replica r (from 2) on P+n+spares+r; with port 0 every
	// listener picks a free port.
	Addr     string
	Replicas int // replicas of the reconfiguration service (default 1)
	Spares   int
	// SuspectAfter: a machine silent that long is replaced by a spare (0:
	// never).
	SuspectAfter time.Duration
	// Heartbeat is how often machines heartbeat (default 200ms).
	Heartbeat time.Duration
	// RaftTick is the replicas' Raft tick (default 100ms).
	RaftTick time.Duration
	// NoSync skips fsync in the replicas' logs (tests).
	NoSync        bool
	Logger        *slog.Logger
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	Register      func(*grpc.Server)
	Metrics       runtime.Metrics
	// RebuildPause: data and parity servers wait this long between the
	// stripes they rebuild in the background (runtime.RebuildPauseFor).
	RebuildPause time.Duration
	// RebuildWindow: stripes a data server's background rebuild keeps in
	// flight (runtime.MachineOptions.RebuildWindow).
	RebuildWindow int
	// RebuildRun: stripes per background snapshot run
	// (runtime.MachineOptions.RebuildRun).
	RebuildRun int
	// RebuildBusyRate: a busy data server's background rebuild rate
	// (runtime.MachineOptions.RebuildBusyRate).
	RebuildBusyRate float64
	// RebuildHeldRun: stripes per snapshot run for a held request
	// (runtime.MachineOptions.RebuildHeldRun).
	RebuildHeldRun int
}

// Local is a running local cluster.
type Local struct {
	o        Options
	Layout   erasure.Layout
	Replicas []*raftreconfig.Replica
	Machines []*runtime.Machine // machine m's original host (nil once closed)
	Spares   []*runtime.Machine
	// EntryAddr is the first replica; Entries lists them all,
	// comma-separated (what clients take as --cluster).
	EntryAddr string
	Entries   string
	// Addresses of every replica, machine and spare.
	ReplicaAddrs, MachineAddrs, SpareAddrs []string
	code                                   *erasure.Code
}

// Start starts the replicas, the machines and the spares.
func Start(o Options) (*Local, error) {
	if err := o.Layout.Validate(); err != nil {
		return nil, err
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	host, portStr, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", o.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: bad port", o.Addr)
	}
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	listen := func(p int) (net.Listener, error) {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		return ln, nil
	}
	at := func(off int) int {
		if port == 0 {
			return 0
		}
		return port + off
	}
	n := o.Layout.N
	lc := &Local{o: o, Layout: o.Layout}
	var rlns, mlns, slns []net.Listener
	for r := 0; r < o.Replicas; r++ {
		off := 0
		if r > 0 {
			off = n + o.Spares + r
		}
		ln, err := listen(at(off))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("reconfiguration replica %d: %w", r+1, err)
		}
		rlns = append(rlns, ln)
		lc.ReplicaAddrs = append(lc.ReplicaAddrs, ln.Addr().String())
	}
	for m := 0; m < n; m++ {
		ln, err := listen(at(1 + m))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("machine %d: %w", m, err)
		}
		mlns = append(mlns, ln)
		lc.MachineAddrs = append(lc.MachineAddrs, ln.Addr().String())
	}
	for i := 0; i < o.Spares; i++ {
		ln, err := listen(at(1 + n + i))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("spare %d: %w", i, err)
		}
		slns = append(slns, ln)
		lc.SpareAddrs = append(lc.SpareAddrs, ln.Addr().String())
	}
	lc.EntryAddr = lc.ReplicaAddrs[0]
	for i, a := range lc.ReplicaAddrs {
		if i > 0 {
			lc.Entries += ","
		}
		lc.Entries += a
	}
	if lc.code, err = erasure.NewCode(o.Layout.G, o.Layout.F); err != nil {
		closeAll()
		return nil, err
	}
	peers := map[uint64]string{}
	for i, a := range lc.ReplicaAddrs {
		peers[uint64(i+1)] = a
	}
	init := raftreconfig.Initial{Config: msg.InitialConfig(o.Layout), Hosts: lc.MachineAddrs, Durability: o.Durability}
	for i := range lc.ReplicaAddrs {
		dir := ""
		if o.Durability != "memory" {
			dir = filepath.Join(o.DataDir, fmt.Sprintf("reconfig-%d", i+1))
		}
		r, err := raftreconfig.Start(raftreconfig.Options{ID: uint64(i + 1), Peers: peers, Listener: rlns[i], Dir: dir, NoSync: o.NoSync,
			Initial: init, Logger: o.Logger.With("reconfig", i+1), ServerOptions: o.ServerOptions, DialOptions: o.DialOptions,
			Register: o.Register, Tick: o.RaftTick, SuspectAfter: o.SuspectAfter})
		if err != nil {
			lc.Close()
			closeAll()
			return nil, fmt.Errorf("reconfiguration replica %d: %w", i+1, err)
		}
		lc.Replicas = append(lc.Replicas, r)
	}
	for m := 0; m < n; m++ {
		mc, err := lc.startMachine(mlns[m], m, filepath.Join(o.DataDir, fmt.Sprintf("machine-%d", m)))
		if err != nil {
			lc.Close()
			closeAll()
			return nil, fmt.Errorf("machine %d: %w", m, err)
		}
		lc.Machines = append(lc.Machines, mc)
	}
	for i := 0; i < o.Spares; i++ {
		mc, err := lc.startMachine(slns[i], -1, filepath.Join(o.DataDir, fmt.Sprintf("spare-%d", i)))
		if err != nil {
			lc.Close()
			closeAll()
			return nil, fmt.Errorf("spare %d: %w", i, err)
		}
		lc.Spares = append(lc.Spares, mc)
	}
	return lc, nil
}

func (lc *Local) startMachine(ln net.Listener, m int, dir string) (*runtime.Machine, error) {
	o := lc.o
	cl := &runtime.Cluster{Config: msg.InitialConfig(o.Layout), Machines: append([]string(nil), lc.MachineAddrs...),
		Durability: o.Durability, Reconfig: lc.ReplicaAddrs}
	var mc *runtime.Machine
	ready := make(chan struct{})
	mc, err := runtime.StartMachine(cl, m, lc.code, runtime.MachineOptions{Listener: ln, Dir: dir, Logger: o.Logger,
		ServerOptions: o.ServerOptions, DialOptions: o.DialOptions, Register: o.Register, Metrics: o.Metrics,
		Joining: m < 0, HeartbeatEvery: o.Heartbeat, RebuildPause: o.RebuildPause, RebuildWindow: o.RebuildWindow, RebuildRun: o.RebuildRun,
		RebuildBusyRate: o.RebuildBusyRate, RebuildHeldRun: o.RebuildHeldRun,
		OnEvicted: func(int, string) {
			<-ready
			mc.Close() // replaced: its slot is served by a spare now
		}})
	close(ready)
	return mc, err
}

// Leader is the replica that leads, or nil.
func (lc *Local) Leader() *raftreconfig.Replica {
	for _, r := range lc.Replicas {
		if r != nil && r.Leader() {
			return r
		}
	}
	return nil
}

// Close stops everything and closes the stores.
func (lc *Local) Close() {
	for _, m := range lc.Machines {
		if m != nil {
			m.Close()
		}
	}
	for _, m := range lc.Spares {
		if m != nil {
			m.Close()
		}
	}
	for _, r := range lc.Replicas {
		if r != nil {
			r.Close()
		}
	}
}
