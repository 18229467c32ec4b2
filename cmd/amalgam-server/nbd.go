package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/nbd"
)

type nbdFlags struct {
	cluster, listen        string
	exports                []string
	clients                int
	timeout, dialTimeout   time.Duration
	logLevel               string
	tlsCert, tlsKey, tlsCA string
}

func newNBDCmd() *cobra.Command {
	var fl nbdFlags
	cmd := &cobra.Command{
		Use:   "nbd --export NAME[=FIRST-LAST] ...",
		Short: "Serve ranges of blocks as Network Block Devices",
		Long: `nbd serves ranges of an Amalgam cluster's blocks as Network Block Device
exports (fixed newstyle NBD, simple replies) at --listen. Each --export
NAME=FIRST-LAST exports blocks FIRST to LAST as one device of
(LAST-FIRST+1) x block-size bytes; NAME alone exports every block. Requests
run concurrently on --clients Go clients; a write of several blocks commits
each shard's blocks as one transaction (docs/nbd.md). Every write is
acknowledged once the cluster has committed it, so FLUSH and FUA wait for
nothing more. Ctrl-C stops it.

Examples:
  amalgam-server nbd --cluster 127.0.0.1:7400 --export disk
  amalgam-server nbd --export a=0-511 --export b=512-1023 --listen 127.0.0.1:10809
  nbdinfo nbd://127.0.0.1/disk
  nbdcopy image.raw nbd://127.0.0.1/disk
  fio --ioengine=nbd --uri=nbd://127.0.0.1/disk --rw=randwrite --bs=4k --size=1m --name=w`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdError(cmd, runNBD(cmd, fl))
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.cluster, "cluster", "127.0.0.1:7400", "cluster entry address; several comma-separated")
	f.StringVar(&fl.listen, "listen", "127.0.0.1:10809", "address NBD clients connect to")
	f.StringArrayVar(&fl.exports, "export", nil, "NAME or NAME=FIRST-LAST: export blocks FIRST to LAST (all blocks if omitted); repeatable")
	f.IntVar(&fl.clients, "clients", 32, "Go clients, the most cluster transactions in flight at once")
	f.DurationVar(&fl.timeout, "timeout", time.Minute, "give up on one NBD request after this long (it then fails with EIO)")
	f.DurationVar(&fl.dialTimeout, "dial-timeout", 10*time.Second, "give up reaching the cluster at start after this long")
	f.StringVar(&fl.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&fl.tlsCert, "tls-cert", "", "PEM client certificate for a cluster running mutual TLS")
	f.StringVar(&fl.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&fl.tlsCA, "tls-ca", "", "PEM CA bundle the cluster's certificates chain to")
	return cmd
}

// exportSpec is a parsed --export.
type exportSpec struct {
	name        string
	first, last uint64
	all         bool
}

func parseExport(s string) (exportSpec, error) {
	name, rng, hasRange := strings.Cut(s, "=")
	if name == "" {
		return exportSpec{}, fmt.Errorf("--export %q: the name must not be empty", s)
	}
	if !hasRange {
		return exportSpec{name: name, all: true}, nil
	}
	a, b, ok := strings.Cut(rng, "-")
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || first > last {
		return exportSpec{}, fmt.Errorf("--export %q: the range must be FIRST-LAST with FIRST <= LAST", s)
	}
	return exportSpec{name: name, first: first, last: last}, nil
}

func (fl nbdFlags) check() ([]exportSpec, slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(fl.logLevel)); err != nil {
		return nil, 0, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", fl.logLevel)
	}
	if len(fl.exports) == 0 {
		return nil, 0, errors.New("give at least one --export NAME[=FIRST-LAST]")
	}
	if fl.clients < 1 || fl.timeout <= 0 || fl.dialTimeout <= 0 {
		return nil, 0, errors.New("--clients, --timeout and --dial-timeout must be positive")
	}
	var specs []exportSpec
	seen := map[string]bool{}
	for _, s := range fl.exports {
		e, err := parseExport(s)
		if err != nil {
			return nil, 0, err
		}
		if seen[e.name] {
			return nil, 0, fmt.Errorf("--export %q: the name is given twice", e.name)
		}
		seen[e.name] = true
		specs = append(specs, e)
	}
	return specs, level, nil
}

func runNBD(cmd *cobra.Command, fl nbdFlags) error {
	specs, level, err := fl.check()
	if err != nil {
		return err
	}
	opts := client.Options{DialTimeout: fl.dialTimeout}
	if fl.tlsCert != "" || fl.tlsKey != "" || fl.tlsCA != "" {
		o, err := client.TLS(fl.tlsCert, fl.tlsKey, fl.tlsCA)
		if err != nil {
			return err
		}
		opts.DialOptions = append(opts.DialOptions, o)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), fl.dialTimeout)
	pool, err := client.DialPool(ctx, fl.cluster, opts, fl.clients)
	cancel()
	if err != nil {
		return err
	}
	defer pool.Close()
	l := pool.Layout()
	srv := &nbd.Server{Log: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))}
	for _, e := range specs {
		ex, err := blockExport(pool, l, e, fl.timeout)
		if err != nil {
			return err
		}
		srv.Exports = append(srv.Exports, ex)
	}
	ln, err := net.Listen("tcp", fl.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	out := cmd.OutOrStdout()
	for _, ex := range srv.Exports {
		r := ex.Backend.(*nbd.Blocks).Range
		fmt.Fprintf(out, "export %s: blocks %d-%d, %d bytes\n", ex.Name, r.First, r.Last(), ex.Size)
	}
	fmt.Fprintf(out, "nbd ready at %s (cluster %s; Ctrl-C stops it)\n", ln.Addr(), fl.cluster)
	sig, stop := untilSignal()
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-sig.Done():
	case err := <-served:
		return err
	}
	fmt.Fprintln(out, "stopping")
	_ = ln.Close()
	srv.Close()
	fmt.Fprintln(out, "stopped")
	return nil
}

func blockExport(pool *client.Pool, l erasure.Layout, e exportSpec, timeout time.Duration) (nbd.Export, error) {
	first, last := e.first, e.last
	if e.all {
		first, last = 0, l.NumBlocks()-1
	}
	r, err := client.RangeOf(l, first, last)
	if err != nil {
		return nbd.Export{}, fmt.Errorf("--export %s: %w", e.name, err)
	}
	pref := uint32(0)
	if bs := l.BlockSize; bs >= 512 && bs&(bs-1) == 0 && bs <= 32<<20 {
		pref = uint32(bs)
	}
	return nbd.Export{
		Name:               e.name,
		Description:        fmt.Sprintf("Amalgam blocks %d-%d of %d bytes", r.First, r.Last(), l.BlockSize),
		Size:               uint64(r.Size()),
		PreferredBlockSize: pref,
		Backend:            &nbd.Blocks{Pool: pool, Range: r, Timeout: timeout},
	}, nil
}
