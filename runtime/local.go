package runtime

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"google.golang.org/grpc"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/wire"
)

// LocalOptions describe a whole cluster in one process (amalgam-server dev).
type LocalOptions struct {
	Layout     erasure.Layout
	Durability string // "durable" or "memory"
	DataDir    string // machine m keeps its store in DataDir/machine-<m>
	// Addr is the entry address (configuration endpoint). With port P,
	// machine m listens on port P+1+m of the same host; with port 0 every
	// listener picks a free port.
	Addr          string
	Logger        *slog.Logger
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	Register      func(*grpc.Server) // added to every server (health, reflection)
	Metrics       Metrics
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
		a := net.JoinHostPort(host, strconv.Itoa(p))
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		return ln, nil
	}
	entryLn, err := listen(port)
	if err != nil {
		return nil, err
	}
	cl := &Cluster{Config: msg.InitialConfig(o.Layout), Durability: o.Durability}
	var mlns []net.Listener
	for m := 0; m < o.Layout.N; m++ {
		p := 0
		if port != 0 {
			p = port + 1 + m
		}
		ln, err := listen(p)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("machine %d: %w", m, err)
		}
		mlns = append(mlns, ln)
		cl.Machines = append(cl.Machines, ln.Addr().String())
	}
	code, err := erasure.NewCode(o.Layout.G, o.Layout.F)
	if err != nil {
		closeAll()
		return nil, err
	}
	lc := &Local{Cluster: cl, EntryAddr: entryLn.Addr().String()}
	for m := 0; m < o.Layout.N; m++ {
		mc, err := StartMachine(cl, m, code, MachineOptions{Listener: mlns[m], Dir: filepath.Join(o.DataDir, fmt.Sprintf("machine-%d", m)),
			Logger: o.Logger, ServerOptions: o.ServerOptions, DialOptions: o.DialOptions, Register: o.Register, Metrics: o.Metrics})
		if err != nil {
			lc.Close()
			closeAll()
			return nil, fmt.Errorf("machine %d: %w", m, err)
		}
		lc.Machines = append(lc.Machines, mc)
	}
	lc.entry = grpc.NewServer(append(wire.ServerOptions(o.Layout.BlockSize), o.ServerOptions...)...)
	wire.RegisterClientServer(lc.entry, &StatusServer{Cluster: cl})
	if o.Register != nil {
		o.Register(lc.entry)
	}
	go func() {
		if err := lc.entry.Serve(entryLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) && o.Logger != nil {
			o.Logger.Error("entry server stopped", "err", err)
		}
	}()
	return lc, nil
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
