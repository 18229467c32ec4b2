package runtime

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"github.com/cockroachdb/pebble/vfs"
	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/baselines/paxos"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/wire"
)

// LocalOptions describe a whole cluster in one process (amalgam-server dev).
type LocalOptions struct {
	Layout     erasure.Layout
	Durability string // "durable" or "memory"
	DataDir    string // machine m keeps its store in DataDir/machine-<m>
	FS         vfs.FS // the stores' file system; nil is the OS's
	// Addr is the entry address (configuration endpoint). With port P,
	// machine m listens on port P+1+m of the same host; with port 0 every
	// listener picks a free port.
	Addr          string
	Logger        *slog.Logger
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	Register      func(*grpc.Server) // added to every server (health, reflection)
	// PaxosTiming is the baselines' timing (StartBaselineLocal; unset
	// fields: BaselineTiming).
	PaxosTiming paxos.Timing
	Metrics     Metrics
}

// Local is a running local cluster.
type Local struct {
	Cluster   *Cluster
	Machines  []*Machine
	EntryAddr string
	entry     *grpc.Server
}

// StartLocal starts the configuration endpoint and every machine.
func StartLocal(o LocalOptions) (*Local, error) {
	if err := o.Layout.Validate(); err != nil {
		return nil, err
	}
	entryLn, mlns, err := listenLocal(o.Addr, o.Layout.N)
	if err != nil {
		return nil, err
	}
	closeAll := func() { closeListeners(append(mlns, entryLn)) }
	cl := &Cluster{Config: msg.InitialConfig(o.Layout), Durability: o.Durability}
	for _, ln := range mlns {
		cl.Machines = append(cl.Machines, ln.Addr().String())
	}
	code, err := erasure.NewCode(o.Layout.G, o.Layout.F)
	if err != nil {
		closeAll()
		return nil, err
	}
	lc := &Local{Cluster: cl, EntryAddr: entryLn.Addr().String()}
	for m := 0; m < o.Layout.N; m++ {
		mc, err := StartMachine(cl, m, code, MachineOptions{Listener: mlns[m], Dir: filepath.Join(o.DataDir, fmt.Sprintf("machine-%d", m)), FS: o.FS,
			Logger: o.Logger, ServerOptions: o.ServerOptions, DialOptions: o.DialOptions, Register: o.Register, Metrics: o.Metrics})
		if err != nil {
			lc.Close()
			closeAll()
			return nil, fmt.Errorf("machine %d: %w", m, err)
		}
		lc.Machines = append(lc.Machines, mc)
	}
	lc.entry = serveEntry(entryLn, &StatusServer{Cluster: cl}, o)
	return lc, nil
}

// listenLocal opens the entry listener at addr and n machine listeners:
// with port P, machine m on port P+1+m of the same host; with port 0, on
// free ports.
func listenLocal(addr string, n int) (entry net.Listener, machines []net.Listener, err error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--addr %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, nil, fmt.Errorf("--addr %q: bad port", addr)
	}
	entry, err = net.Listen("tcp", net.JoinHostPort(host, portStr))
	if err != nil {
		return nil, nil, err
	}
	for m := 0; m < n; m++ {
		p := 0
		if port != 0 {
			p = port + 1 + m
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			closeListeners(append(machines, entry))
			return nil, nil, fmt.Errorf("machine %d: %w", m, err)
		}
		machines = append(machines, ln)
	}
	return entry, machines, nil
}

// serveEntry serves the client API's Status at the entry listener.
func serveEntry(ln net.Listener, srv wire.ClientServer, o LocalOptions) *grpc.Server {
	s := grpc.NewServer(append(wire.ServerOptions(o.Layout.BlockSize), o.ServerOptions...)...)
	wire.RegisterClientServer(s, srv)
	if o.Register != nil {
		o.Register(s)
	}
	go func() {
		if err := s.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) && o.Logger != nil {
			o.Logger.Error("entry server stopped", "err", err)
		}
	}()
	return s
}

// Close stops everything and closes the stores.
func (lc *Local) Close() {
	if lc.entry != nil {
		lc.entry.Stop()
	}
	for _, m := range lc.Machines {
		m.Close()
	}
}
