package runtime

import (
	"cmp"
	"context"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/amalgam-store/amalgam/data"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/parity"
	"github.com/amalgam-store/amalgam/wire"
	"github.com/amalgam-store/amalgam/witness"
)

// The address book (docs/reconfiguration.md). Configurations name server
// incarnations, not hosts: data/m, parity/m and witness/m are served by
// whichever host holds machine slot m. The reconfiguration service keeps
// the slot -> host map (and the registered spares) in its Raft log, next
// to the configurations, and moves a slot to a spare when it replaces a
// failed machine. Machines and spares heartbeat the service every
// HeartbeatEvery; every answer carries the address book, which the
// machine adopts when its version is newer. A spare that finds itself
// given a slot starts serving it: the NewConfig messages that start the
// slot's new incarnations create its servers (Options.NewNode). A machine
// that finds its slot given to another host was replaced: it stops.

// multicast sends messages for the reconfiguration service to every
// replica (only the leader acts on them).
func (c *Cluster) multicast(a node.Addr) []string {
	if a == msg.ReconfigAddr {
		return c.Reconfig
	}
	return nil
}

// Update adopts an address book newer than the one held. It reports
// whether it changed anything.
func (c *Cluster) Update(dir *wire.Directory) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dir.GetVersion() <= c.version || len(dir.GetHosts()) != len(c.Machines) {
		return false
	}
	c.version = dir.GetVersion()
	c.Machines = slices.Clone(dir.GetHosts())
	c.spares = slices.Clone(dir.GetSpares())
	return true
}

// Host is the host serving machine slot m.
func (c *Cluster) Host(m int) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if m < 0 || m >= len(c.Machines) {
		return ""
	}
	return c.Machines[m]
}

// Slot is the machine slot this host serves, -1 for an unassigned spare.
func (mc *Machine) Slot() int { return int(mc.me.Load()) }

// Self is the host:port this machine is known by.
func (mc *Machine) Self() string { return mc.self }

// initialNodes are the servers a machine starts with: all of slot me for
// the slot's original host, only those it stored for a host that joined
// (the rest start when a NewConfig gives them a new incarnation here).
func (mc *Machine) initialNodes(me int) (map[node.Addr]node.Node, error) {
	out := map[node.Addr]node.Node{}
	if me < 0 {
		return out, nil
	}
	for _, a := range []node.Addr{msg.DataAddr(me), msg.ParityAddr(me), msg.WitnessAddr(me)} {
		n := mc.fresh(a)
		if n == nil {
			continue
		}
		if mc.o.Joining {
			if mc.store == nil {
				continue
			}
			if has, err := mc.store.hasNode(a); err != nil {
				return nil, err
			} else if !has {
				continue
			}
		}
		out[a] = n
	}
	return out, nil
}

// fresh is a new server for address a, in configuration 0.
func (mc *Machine) fresh(a node.Addr) node.Node {
	role, m, err := msg.ParseAddr(a)
	cfg := mc.cl.Config
	if err != nil || m >= cfg.Layout.N {
		return nil
	}
	cfg.Num = 0
	switch role {
	case "data":
		s := data.New(cfg, m)
		s.SetRebuildPause(mc.o.RebuildPause)
		s.SetRebuildWindow(cmp.Or(mc.o.RebuildWindow, DefaultRebuildWindow))
		s.SetRebuildRun(rebuildRun(mc.o.RebuildRun, cfg.Layout.BlockSize))
		s.SetRebuildBusyPause(rebuildBusyPause(mc.o.RebuildBusyRate, cfg.Layout.BlockSize))
		s.SetHeldRun(heldRun(mc.o.RebuildHeldRun, cfg.Layout.BlockSize))
		return s
	case "parity":
		s := parity.New(cfg, m, mc.code)
		s.SetRebuildPause(mc.o.RebuildPause)
		s.SetRebuildWindow(cmp.Or(mc.o.RebuildWindow, DefaultRebuildWindow))
		s.SetRebuildRun(rebuildRun(mc.o.RebuildRun, cfg.Layout.BlockSize))
		return s
	case "witness":
		if cfg.Layout.W > 0 {
			return witness.New(cfg, m)
		}
	}
	return nil
}

// loadStored starts the servers of slot m that this host stored (a spare
// that served the slot before a restart).
func (mc *Machine) loadStored(m int) {
	if mc.store == nil {
		return
	}
	for _, a := range []node.Addr{msg.DataAddr(m), msg.ParityAddr(m), msg.WitnessAddr(m)} {
		if has, err := mc.store.hasNode(a); err != nil || !has {
			continue
		}
		if n := mc.fresh(a); n != nil {
			if _, err := mc.addLive(a, n); err != nil {
				mc.log.Error("restoring a server", "addr", a, "err", err)
			}
		}
	}
}

// newNode makes a server for a message that starts a new incarnation at
// an address of this host's slot (Options.NewNode).
func (mc *Machine) newNode(a node.Addr, m node.Message) node.Node {
	_, slot, err := msg.ParseAddr(a)
	if err != nil || slot != mc.Slot() {
		return nil
	}
	st, ok := m.(node.Starter)
	if !ok {
		return nil
	}
	if inc, ok := st.StartsIncarnation(a); !ok || inc <= 1 {
		return nil
	}
	return mc.fresh(a)
}

// heartbeat tells the reconfiguration service this machine is alive and
// adopts the address book it answers with.
func (mc *Machine) heartbeat() {
	defer mc.hbWG.Done()
	every := mc.o.HeartbeatEvery
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	opts := append(wire.DialOptions(mc.cl.Config.Layout.BlockSize), grpc.WithTransportCredentials(insecure.NewCredentials()))
	opts = append(opts, mc.o.DialOptions...)
	var clients []wire.ReconfigClient
	for _, a := range mc.cl.Reconfig {
		cc, err := grpc.NewClient(a, opts...)
		if err != nil {
			mc.log.Error("reconfiguration replica", "addr", a, "err", err)
			continue
		}
		defer cc.Close()
		clients = append(clients, wire.NewReconfigClient(cc))
	}
	leader := 0
	evicted := false
	tickUntil(every, mc.hb, func() {
		req := &wire.HeartbeatRequest{Host: mc.self, Machine: int32(mc.Slot())}
		for i := range clients {
			k := (leader + i) % len(clients)
			ctx, cancel := context.WithTimeout(context.Background(), every) // a paused replica costs one interval
			resp, err := clients[k].Heartbeat(ctx, req)
			cancel()
			if err != nil {
				continue
			}
			mc.adopt(resp.GetDirectory(), &evicted)
			if resp.GetLeader() {
				leader = k
				break
			}
			if la := resp.GetLeaderAddr(); la != "" {
				if j := slices.Index(mc.cl.Reconfig, la); j >= 0 && j != k {
					leader = j
				}
			}
		}
	})
}

// adopt takes a newer address book and acts on what it says about this
// host.
func (mc *Machine) adopt(dir *wire.Directory, evicted *bool) {
	if !mc.cl.Update(dir) {
		return
	}
	mc.log.Info("address book updated", "version", dir.GetVersion(), "hosts", dir.GetHosts(), "spares", dir.GetSpares())
	me := mc.Slot()
	if me < 0 {
		if m := slices.Index(dir.GetHosts(), mc.self); m >= 0 {
			mc.me.Store(int64(m))
			mc.log.Warn("this spare now serves a machine slot; its servers start as the reconfiguration service replaces them", "machine", m)
			mc.loadStored(m)
			if mc.o.OnAssigned != nil {
				mc.o.OnAssigned(m)
			}
		}
		return
	}
	if h := dir.GetHosts()[me]; h != mc.self && !*evicted {
		*evicted = true
		mc.log.Error("this machine was replaced: its slot is served by another host now", "machine", me, "host", h)
		if mc.o.OnEvicted != nil {
			go mc.o.OnEvicted(me, h)
		}
	}
}
