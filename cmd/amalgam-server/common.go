package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/internal/buildinfo"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/runtime"
	"github.com/amalgam-store/amalgam/wire"
)

// commonFlags are shared by the server subcommands: logging, metrics and
// mutual TLS.
type commonFlags struct {
	logLevel, logFormat    string
	metricsAddr            string
	pprof                  bool
	immediateCheck         bool
	tlsCert, tlsKey, tlsCA string
	mutant                 mutantFlag
}

func (c *commonFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&c.logFormat, "log-format", "text", "text or json (one JSON object per line)")
	f.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (empty: off)")
	f.BoolVar(&c.pprof, "pprof", false, "also serve Go profiles at http://METRICS-ADDR/debug/pprof/ (needs --metrics-addr)")
	f.BoolVar(&c.immediateCheck, "immediate-check", false, "run the immediate safety check on the data servers' PREPARE-OKs (online checking)")
	f.StringVar(&c.tlsCert, "tls-cert", "", "PEM certificate for mutual TLS (with --tls-key and --tls-ca)")
	f.StringVar(&c.tlsKey, "tls-key", "", "PEM private key for mutual TLS")
	f.StringVar(&c.tlsCA, "tls-ca", "", "PEM CA bundle that peers' and clients' certificates must chain to")
	c.mutant.register(cmd)
}

type serverEnv struct {
	log         *slog.Logger
	serverOpts  []grpc.ServerOption
	dialOpts    []grpc.DialOption
	register    func(*grpc.Server)
	metrics     *promMetrics
	metricsAddr string
	closers     []func()
	ready       *readiness
	immediate   bool // --immediate-check
}

// steerMachines turns on the immediate check the flags ask for.
func (e *serverEnv) steerMachines(ms ...*runtime.Machine) {
	if !e.immediate {
		return
	}
	for _, m := range ms {
		m.SetImmediateCheck(runtime.DataCommitCheck())
	}
}

func (e *serverEnv) close() {
	for _, c := range e.closers {
		c()
	}
}

// untilSignal is a context that ends on Ctrl-C (SIGINT) or SIGTERM.
func untilSignal() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// setup builds the environment the flags ask for, and a context that ends
// on Ctrl-C or SIGTERM; env.close releases both.
func (c *commonFlags) setup(cmd *cobra.Command, blockSize int) (*serverEnv, context.Context, error) {
	env, err := c.env(cmd, blockSize)
	if err != nil {
		return nil, nil, err
	}
	c.mutant.announce(cmd.OutOrStdout(), env.log)
	ctx, stop := untilSignal()
	env.closers = append(env.closers, stop)
	return env, ctx, nil
}

func (c *commonFlags) env(cmd *cobra.Command, blockSize int) (*serverEnv, error) {
	if err := c.mutant.set(); err != nil {
		return nil, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", c.logLevel)
	}
	env := &serverEnv{immediate: c.immediateCheck}
	hopts := &slog.HandlerOptions{Level: level}
	switch c.logFormat {
	case "text":
		env.log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), hopts))
	case "json":
		env.log = slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), hopts))
	default:
		return nil, fmt.Errorf("--log-format must be text or json, got %q", c.logFormat)
	}
	if c.pprof && c.metricsAddr == "" {
		return nil, errors.New("--pprof needs --metrics-addr (profiles are served on the metrics listener)")
	}
	env.metrics = newPromMetrics()
	env.serverOpts = append(env.serverOpts, grpc.ChainUnaryInterceptor(env.metrics.interceptor))
	env.ready = &readiness{}
	env.register = func(s *grpc.Server) {
		hs := health.NewServer()
		env.ready.add(hs)
		healthpb.RegisterHealthServer(s, hs)
		reflection.Register(s)
	}
	if c.tlsCert != "" || c.tlsKey != "" || c.tlsCA != "" {
		srv, cli, err := loadTLS(c.tlsCert, c.tlsKey, c.tlsCA)
		if err != nil {
			return nil, err
		}
		env.serverOpts = append(env.serverOpts, grpc.Creds(srv),
			grpc.ChainUnaryInterceptor(authzUnary), grpc.ChainStreamInterceptor(authzStream))
		env.dialOpts = append(env.dialOpts, grpc.WithTransportCredentials(cli))
	}
	if c.metricsAddr != "" {
		ln, err := net.Listen("tcp", c.metricsAddr)
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(env.metrics.reg, promhttp.HandlerOpts{}))
		if c.pprof {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		env.metricsAddr = ln.Addr().String()
		env.closers = append(env.closers, func() { _ = hs.Close() })
	}
	return env, nil
}

// loadTLS builds mutual-TLS credentials: the server requires a client
// certificate signed by the CA, and the client verifies the server's.
func loadTLS(certFile, keyFile, caFile string) (credentials.TransportCredentials, credentials.TransportCredentials, error) {
	if certFile == "" || keyFile == "" || caFile == "" {
		return nil, nil, errors.New("--tls-cert, --tls-key and --tls-ca must be given together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("--tls-ca: no certificates in %s", caFile)
	}
	srv := &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	cli := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	return credentials.NewTLS(srv), credentials.NewTLS(cli), nil
}

// promMetrics implements runtime.Metrics and the client API metrics.
type promMetrics struct {
	reg        *prometheus.Registry
	ops        *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	reconnects prometheus.Counter
	refused    prometheus.Counter
	batches    prometheus.Histogram
	inFlight   prometheus.Gauge
	nodes      *nodeCollector
}

func newPromMetrics() *promMetrics {
	m := &promMetrics{reg: prometheus.NewRegistry()}
	m.ops = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amalgam_operations_total",
		Help: "Client transactions by kind (single op kind, or txn) and gRPC code."}, []string{"kind", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "amalgam_operation_seconds",
		Help: "Latency of client transactions at the data server.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"kind"})
	m.reconnects = prometheus.NewCounter(prometheus.CounterOpts{Name: "amalgam_stream_reconnects_total",
		Help: "Ordered-stream sessions that broke and were resumed."})
	m.refused = prometheus.NewCounter(prometheus.CounterOpts{Name: "amalgam_immediate_check_refusals_total",
		Help: "Messages the immediate safety check postponed (online checking)."})
	m.batches = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "amalgam_batch_events",
		Help: "Events per event-loop batch (one group commit each).", Buckets: prometheus.ExponentialBuckets(1, 2, 10)})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "amalgam_client_requests_in_flight",
		Help: "Client transactions received and not yet answered (waiting to commit)."})
	m.nodes = newNodeCollector()
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "amalgam_build_info",
		Help:        "Always 1; labels name the build: module version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.Go}})
	build.Set(1)
	syncs := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "amalgam_store_syncs_total",
		Help: "fsync and fdatasync calls of the process's pebble stores (WAL, flushes, compactions, directories)."},
		func() float64 { return float64(runtime.StoreDiskStats().Syncs) })
	written := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "amalgam_store_bytes_written_total",
		Help: "Bytes the process's pebble stores wrote to files (WAL, flushes, compactions)."},
		func() float64 { return float64(runtime.StoreDiskStats().BytesWritten) })
	m.reg.MustRegister(m.ops, m.latency, m.reconnects, m.refused, m.batches, m.inFlight, m.nodes, build, syncs, written,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(netCounters()...)
	return m
}

// netCounters export runtime.TransportStats: what the process's hosts
// sent other hosts.
func netCounters() []prometheus.Collector {
	c := func(name, help string, v func(runtime.NetStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(runtime.TransportStats())) })
	}
	return []prometheus.Collector{
		c("amalgam_stream_frames_total", "Ordered-stream frames sent to other hosts (each a gRPC message of one or more stream messages).",
			func(s runtime.NetStats) uint64 { return s.StreamFrames }),
		c("amalgam_stream_messages_total", "Stream messages sent to other hosts.",
			func(s runtime.NetStats) uint64 { return s.StreamMsgs }),
		c("amalgam_stream_acks_total", "Stream acknowledgements sent to other hosts.",
			func(s runtime.NetStats) uint64 { return s.StreamAcks }),
		c("amalgam_unordered_sends_total", "Batches of unordered messages sent to other hosts (each a gRPC message on the host's send stream).",
			func(s runtime.NetStats) uint64 { return s.Sends }),
		c("amalgam_unordered_dropped_total", "Unordered messages to other hosts dropped by their sender (queue full or the batch failed).",
			func(s runtime.NetStats) uint64 { return s.SendDrops }),
		c("amalgam_node_bytes_sent_total", "Encoded bytes of the stream and unordered messages sent to other hosts (without gRPC framing).",
			func(s runtime.NetStats) uint64 { return s.StreamBytes + s.SendBytes }),
	}
}

func (m *promMetrics) StreamReconnect(node.Addr, node.Addr) { m.reconnects.Inc() }
func (m *promMetrics) EventRefused(node.Addr)               { m.refused.Inc() }
func (m *promMetrics) BatchCommitted(events int, _ time.Duration) {
	m.batches.Observe(float64(events))
}

func (m *promMetrics) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	r, ok := req.(*wire.ExecuteRequest)
	if !ok {
		return handler(ctx, req)
	}
	kind := "txn"
	if len(r.GetOps()) == 1 {
		kind = strings.ToLower(strings.TrimPrefix(r.GetOps()[0].GetKind().String(), "OP_KIND_"))
	}
	start := time.Now()
	m.inFlight.Inc()
	resp, err := handler(ctx, req)
	m.inFlight.Dec()
	m.latency.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	m.ops.WithLabelValues(kind, status.Code(err).String()).Inc()
	return resp, err
}
