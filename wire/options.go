package wire

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/keepalive"
)

// MaxTxnOps bounds the operations in one transaction; with the block size
// it bounds every message, so gRPC's size limits can be set from it.
const MaxTxnOps = 64

// MaxMessageSize is the gRPC send and receive limit for a cluster with the
// given block size: a transaction of MaxTxnOps whole-block writes (or the
// reply to as many whole-block reads) plus headroom, and never less than
// gRPC's default 4 MiB. Both ends must use the same value.
func MaxMessageSize(blockSize int) int {
	n := 2*MaxTxnOps*blockSize + 1<<20
	return max(n, 4<<20)
}

// Keepalive settings. Clients ping an idle connection every
// ClientKeepaliveTime; the server's enforcement policy permits pings that
// often (MinTime is smaller), even without active streams, so it never
// answers a ping with GOAWAY "too_many_pings".
const (
	ClientKeepaliveTime    = 10 * time.Second
	ClientKeepaliveTimeout = 5 * time.Second
	ServerMinPingInterval  = 5 * time.Second
	ServerKeepaliveTime    = 30 * time.Second
	ServerKeepaliveTimeout = 10 * time.Second
)

// Reconnection backoff. gRPC's default starts at 1s and grows to 120s,
// so a peer that restarts after a crash would wait seconds before anyone
// reconnects to it; a cluster of a few machines can afford to retry a
// refused connection every 50ms to 1s.
var ReconnectBackoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

// MinConnectTimeout bounds one connection attempt (gRPC's default is 20s).
const MinConnectTimeout = 5 * time.Second

// Flow control and buffers. gRPC's defaults (64 KiB windows that BDP
// estimation grows, 32 KiB socket buffers) stall a 128 KiB block on
// window updates, cost BDP pings, and take several system calls per
// block; static windows of a few MiB and 256 KiB write buffers (shared:
// released while a connection is idle) carry a frame of stream messages in
// about one write.
const (
	StreamWindow    = 4 << 20
	ConnWindow      = 16 << 20
	WriteBufferSize = 256 << 10
	ReadBufferSize  = 64 << 10
)

// ServerOptions are the options every Amalgam gRPC server uses.
func ServerOptions(blockSize int) []grpc.ServerOption {
	n := MaxMessageSize(blockSize)
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(n),
		grpc.MaxSendMsgSize(n),
		grpc.StaticStreamWindowSize(StreamWindow),
		grpc.StaticConnWindowSize(ConnWindow),
		grpc.WriteBufferSize(WriteBufferSize),
		grpc.ReadBufferSize(ReadBufferSize),
		grpc.SharedWriteBuffer(true),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: ServerMinPingInterval, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: ServerKeepaliveTime, Timeout: ServerKeepaliveTimeout}),
	}
}

// DialOptions are the options every Amalgam gRPC client uses (add
// transport credentials).
func DialOptions(blockSize int) []grpc.DialOption {
	n := MaxMessageSize(blockSize)
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(n), grpc.MaxCallSendMsgSize(n)),
		grpc.WithStaticStreamWindowSize(StreamWindow),
		grpc.WithStaticConnWindowSize(ConnWindow),
		grpc.WithWriteBufferSize(WriteBufferSize),
		grpc.WithReadBufferSize(ReadBufferSize),
		grpc.WithSharedWriteBuffer(true),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: ClientKeepaliveTime, Timeout: ClientKeepaliveTimeout, PermitWithoutStream: true}),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: ReconnectBackoff, MinConnectTimeout: MinConnectTimeout}),
	}
}
