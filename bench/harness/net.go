// Package harness runs Amalgam, ShardedPaxos and RSPaxos side by side for
// the evaluation of thesis 3.6: closed-loop clients, seeded workloads,
// warm-up and fixed duration, and results as JSON, CSV and plots.
//
// Every system runs on the production runtime's hosts (runtime.Host), one
// per machine: over gRPC on loopback (grpc.go), or over simulated links
// (this file and simnet.go) that model every machine's link (a bandwidth
// limit per direction) so that bytes on the wire cost time as they do
// between real machines. Nothing is persisted: every run is in memory
// mode (the baselines have no persistence), and every result says so.
package harness

import (
	"fmt"
	"sync"
	"time"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
)

// NetOptions describe the simulated network.
type NetOptions struct {
	// Bandwidth is each machine's link speed in bytes per second, in each
	// direction (0: unlimited). A message between two machines occupies the
	// sender's egress and the receiver's ingress for size/Bandwidth.
	// Clients sit on their own unlimited machines.
	Bandwidth float64
	// Latency is added to every message between two machines.
	Latency time.Duration
}

// clientHost names the host that runs every client, on a machine of its
// own with an unlimited link.
const clientHost = "clients"

// Net is a deployment's hosts on simulated links: runtime.Host per server
// machine, one more for the clients.
type Net struct {
	k         *links
	machines  int
	blockSize int
	where     map[node.Addr]string // host of each node
	nodes     map[string]map[node.Addr]node.Node
	hosts     []*runtime.Host
	once      sync.Once
}

// NewNet makes a network of machines server machines for nodes that move
// blocks of blockSize bytes.
func NewNet(machines, blockSize int, opt NetOptions) *Net {
	return &Net{k: newLinks(machines, opt), machines: machines, blockSize: blockSize,
		where: map[node.Addr]string{}, nodes: map[string]map[node.Addr]node.Node{}}
}

func hostName(machine int) string {
	if machine < 0 {
		return clientHost
	}
	return fmt.Sprintf("machine/%d", machine)
}

// Add hosts n at addr on machine (-1 for a client). Call before Start.
func (nt *Net) Add(addr node.Addr, machine int, n node.Node) {
	h := hostName(machine)
	nt.where[addr] = h
	if nt.nodes[h] == nil {
		nt.nodes[h] = map[node.Addr]node.Node{}
	}
	nt.nodes[h][addr] = n
}

func (nt *Net) resolve(a node.Addr) (string, bool) {
	h, ok := nt.where[a]
	return h, ok
}

// Start starts every host, the clients' last; each node's Init runs first
// in its loop. Unordered messages to a host that is not serving yet wait
// for it; a stream to it is retried.
func (nt *Net) Start() error {
	go nt.k.run()
	order := make([]int, 0, nt.machines+1)
	for m := 0; m < nt.machines; m++ {
		order = append(order, m)
	}
	for _, m := range append(order, -1) {
		name := hostName(m)
		if nt.nodes[name] == nil {
			continue
		}
		h := runtime.NewHost(runtime.Options{Transport: nt.k.endpoint(name, m), Resolve: nt.resolve,
			BlockSize: nt.blockSize})
		for a, n := range nt.nodes[name] {
			if err := h.AddNode(a, n); err != nil {
				return err
			}
		}
		nt.hosts = append(nt.hosts, h)
	}
	for _, h := range nt.hosts {
		h.Start()
	}
	return nil
}

// Stop stops every host and the links; traffic in flight is dropped.
func (nt *Net) Stop() {
	nt.once.Do(func() {
		for _, h := range nt.hosts {
			h.Stop()
		}
		close(nt.k.stop)
		<-nt.k.done
	})
}

// Dropped is the number of unordered batches full links dropped.
func (nt *Net) Dropped() int64 { return nt.k.dropped.Load() }

// BytesBetweenMachines is the number of bytes sent between machines.
func (nt *Net) BytesBetweenMachines() int64 { return nt.k.bytesOut.Load() }
