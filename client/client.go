// Package client is the Go client of Amalgam. It learns the layout from the
// cluster's entry address (the Status RPC), sends each transaction to the
// data server of its shard, and retries under one client id and sequence
// number, so that a retried transaction executes at most once.
package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/wire"
)

// Options configure a client.
type Options struct {
	// ID is the client id; 0 draws a random one. Two clients must never
	// share an id.
	ID uint64
	// DialOptions are added to the defaults (for example transport
	// credentials; without them connections are insecure).
	DialOptions []grpc.DialOption
	// AttemptTimeout bounds one attempt before the client retries
	// (default 2s). The context passed to each call bounds the whole call.
	// Against a baseline (ShardedPaxos, RSPaxos), whose next machine runs
	// a timed-out transaction again from its start, each timed-out
	// attempt doubles the next one's bound.
	AttemptTimeout time.Duration
	// DialTimeout bounds how long the client keeps trying to connect to
	// the entry addresses before it gives up and names the cause
	// (default 2s); a TLS failure gives up at once.
	DialTimeout time.Duration
}

// Client talks to one cluster. It is safe for concurrent use, but runs one
// transaction at a time (the at-most-once protocol allows one outstanding
// request per client id); use several clients for concurrency.
type Client struct {
	entry string
	opts  Options
	id    uint64

	mu     sync.Mutex // serializes transactions
	seq    uint64
	cmu    sync.Mutex // guards conns and status
	conns  map[string]*grpc.ClientConn
	status *wire.StatusResponse
	// nextEntry is the entry address tried first (the last that answered).
	nextEntry int
	layout    erasure.Layout
}

// Dial connects to the cluster at entry (host:port) and fetches its layout.
func Dial(ctx context.Context, entry string, opts Options) (*Client, error) {
	c := &Client{entry: entry, opts: opts, id: opts.ID, conns: map[string]*grpc.ClientConn{}}
	if c.id == 0 {
		c.id = randomID()
	}
	if c.opts.AttemptTimeout <= 0 {
		c.opts.AttemptTimeout = 2 * time.Second
	}
	if c.opts.DialTimeout <= 0 {
		c.opts.DialTimeout = 2 * time.Second
	}
	if err := c.Refresh(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func randomID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		// Keep ids below 2^63 so they print as non-negative everywhere.
		if v := binary.LittleEndian.Uint64(b[:]) >> 1; v != 0 {
			return v
		}
	}
}

// ID is the client id.
func (c *Client) ID() uint64 { return c.id }

// Close closes every connection.
func (c *Client) Close() {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	for _, cc := range c.conns {
		_ = cc.Close()
	}
	c.conns = map[string]*grpc.ClientConn{}
}

func (c *Client) conn(addr string, blockSize int) (*grpc.ClientConn, error) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	if blockSize <= 0 {
		blockSize = 1 << 20 // before the layout is known: generous limits
	}
	opts := append(wire.DialOptions(blockSize), grpc.WithTransportCredentials(insecure.NewCredentials()))
	opts = append(opts, c.opts.DialOptions...)
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	c.conns[addr] = cc
	return cc, nil
}

// Refresh fetches the cluster's configuration from the entry address. The
// entry may list several addresses, comma-separated (the replicas of the
// reconfiguration service): they are tried in turn. When no entry can be
// connected to within the dial timeout (or one refuses us for good, as a
// TLS failure does), it gives up and names the cause.
func (c *Client) Refresh(ctx context.Context) error {
	entries := strings.Split(c.entry, ",")
	for i := range entries {
		entries[i] = strings.TrimSpace(entries[i])
		if err := checkAddr(entries[i]); err != nil {
			return fmt.Errorf("cluster %s: %w", c.entry, err)
		}
	}
	dialBy := time.Now().Add(c.opts.DialTimeout)
	lastErr := make([]error, len(entries)) // per entry
	var st *wire.StatusResponse
	var err error
	c.cmu.Lock()
	start := c.nextEntry
	c.cmu.Unlock()
	for try := 0; ; try++ {
		i := (start + try) % len(entries)
		var cc *grpc.ClientConn
		if cc, err = c.conn(entries[i], 0); err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
		st, err = wire.NewClientClient(cc).Status(actx, &wire.StatusRequest{})
		cancel()
		if err == nil {
			c.cmu.Lock()
			c.nextEntry = i
			c.cmu.Unlock()
			break
		}
		if !(connFailure(lastErr[i]) && status.Code(err) == codes.DeadlineExceeded && Cause(err) == "") {
			lastErr[i] = err // keep a named connection failure over a bare timeout
		}
		if ctx.Err() != nil || len(entries) == 1 && !retryable(err) || allFailed(lastErr, dialBy) {
			break
		}
		if (try+1)%len(entries) == 0 {
			select { // every entry failed: pause before the next round
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}
	if err != nil {
		if why := unreachable(entries, lastErr); why != "" {
			return fmt.Errorf("%w: %s", ErrUnreachable, why)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("cluster %s unreachable: %w (last error: %s)", c.entry, ctx.Err(), describe(err))
		}
		return fmt.Errorf("cluster %s: %s", c.entry, status.Convert(err).Message())
	}
	l, err := layoutFromProto(st.GetLayout())
	if err != nil {
		return fmt.Errorf("cluster %s sent a bad layout: %w", c.entry, err)
	}
	if n := len(st.GetMachines()); n != l.N && (!isBaseline(st) || n < l.N) {
		return fmt.Errorf("cluster %s lists %d machines for a layout of %d", c.entry, n, l.N)
	}
	c.cmu.Lock()
	c.status, c.layout = st, l
	c.cmu.Unlock()
	return nil
}

// isBaseline reports whether the cluster runs a baseline protocol
// (ShardedPaxos or RSPaxos), whose machines each accept every request.
func isBaseline(st *wire.StatusResponse) bool {
	return st.GetProtocol() != "" && st.GetProtocol() != "amalgam"
}

func layoutFromProto(p *wire.Layout) (erasure.Layout, error) {
	l := erasure.Layout{N: int(p.GetN()), G: int(p.GetG()), F: int(p.GetF()), W: int(p.GetW()),
		Stripes: int(p.GetStripes()), BlockSize: int(p.GetBlockSize())}
	return l, l.Validate()
}

// Layout is the cluster's layout as last fetched.
func (c *Client) Layout() erasure.Layout {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	return c.layout
}

// Status returns the cluster description and, from every machine that
// answers, the state of its servers (machines that do not answer are
// listed without node state). Suspected comes from the leading
// reconfiguration replica; ReconfigLeader stays set when the entry replica
// does not lead and the leader could not be asked.
func (c *Client) Status(ctx context.Context) (*wire.StatusResponse, error) {
	if err := c.Refresh(ctx); err != nil {
		return nil, err
	}
	c.cmu.Lock()
	st, bs := c.status, c.layout.BlockSize
	c.cmu.Unlock()
	out := &wire.StatusResponse{ConfigNum: st.ConfigNum, Layout: st.Layout, Machines: st.Machines, Durability: st.Durability,
		Spares: st.Spares, Protocol: st.Protocol, Suspected: st.Suspected, ReconfigLeader: st.ReconfigLeader}
	if l := st.GetReconfigLeader(); l != "" {
		// Only the leading replica knows which machines it suspects.
		if cc, err := c.conn(l, 0); err == nil {
			actx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
			if r, err := wire.NewClientClient(cc).Status(actx, &wire.StatusRequest{}); err == nil && r.GetReconfigLeader() == "" {
				out.Suspected, out.ReconfigLeader = r.GetSuspected(), ""
			}
			cancel()
		}
	}
	for _, m := range st.GetMachines() {
		cc, err := c.conn(m.GetAddr(), bs)
		if err != nil {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
		r, err := wire.NewClientClient(cc).Status(actx, &wire.StatusRequest{})
		cancel()
		if err == nil {
			out.Nodes = append(out.Nodes, r.GetNodes()...)
		}
	}
	return out, nil
}

// ErrInvalid marks requests rejected for their arguments; nothing was
// applied.
var ErrInvalid = errors.New("invalid request")

// Txn runs ops atomically on the shard that holds their blocks. It
// retries until the transaction commits, is rejected, or ctx ends; across
// retries it executes at most once. An outcome with Aborted set means a
// check failed and nothing was applied.
func (c *Client) Txn(ctx context.Context, ops []msg.Op) (msg.Outcome, error) {
	req := &wire.ExecuteRequest{ClientId: c.id, Seq: 1, Ops: wire.OpsToProto(ops)}
	if _, _, err := wire.DecodeExecute(req, c.Layout()); err != nil {
		return msg.Outcome{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	req.Seq = c.seq
	backoff := 20 * time.Millisecond
	tries := 0
	timeout := c.opts.AttemptTimeout
	var last error
	for {
		c.cmu.Lock()
		l, st := c.layout, c.status
		c.cmu.Unlock()
		m := l.Shard(ops[0].Block)
		if isBaseline(st) {
			// Any machine runs the request; move on from one that fails.
			m = (m + tries) % len(st.GetMachines())
		}
		tries++
		req.ConfigNum = st.GetConfigNum()
		resp, err := c.attempt(ctx, st.GetMachines()[m].GetAddr(), l.BlockSize, req, timeout)
		if err == nil {
			return msg.Outcome{Results: wire.ResultsFromProto(resp.GetResults()), Aborted: resp.GetAborted()}, nil
		}
		last = err
		switch status.Code(err) {
		case codes.InvalidArgument:
			return msg.Outcome{}, fmt.Errorf("%w: %s", ErrInvalid, status.Convert(err).Message())
		case codes.PermissionDenied, codes.Unauthenticated:
			return msg.Outcome{}, errors.New(status.Convert(err).Message())
		case codes.FailedPrecondition:
			// Stale configuration or wrong shard: refetch and retry.
			if rerr := c.Refresh(ctx); rerr != nil {
				last = rerr
			}
		case codes.Unavailable, codes.DeadlineExceeded:
			if isBaseline(st) && status.Code(err) == codes.DeadlineExceeded {
				// The next machine runs the transaction from its
				// start: give it twice as long, so that a transaction
				// longer than an attempt still finishes.
				timeout *= 2
			}
			// The machine may be down and its slot moved to a spare:
			// refetch the address book (a failure here is not the
			// transaction's error).
			rctx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
			_ = c.Refresh(rctx)
			cancel()
		}
		if ctx.Err() != nil {
			return msg.Outcome{}, fmt.Errorf("%w (last error: %s)", ctx.Err(), describe(last))
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return msg.Outcome{}, fmt.Errorf("%w (last error: %s)", ctx.Err(), describe(last))
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func describe(err error) string {
	if c := Cause(err); c != "" {
		return c
	}
	if s, ok := status.FromError(err); ok {
		return s.Code().String() + ": " + s.Message()
	}
	return err.Error()
}

func (c *Client) attempt(ctx context.Context, addr string, blockSize int, req *wire.ExecuteRequest, timeout time.Duration) (*wire.ExecuteResponse, error) {
	cc, err := c.conn(addr, blockSize)
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return wire.NewClientClient(cc).Execute(actx, req)
}

// Read returns length bytes of block at offset (length 0: to the end).
func (c *Client) Read(ctx context.Context, block uint64, offset, length int) ([]byte, error) {
	out, err := c.Txn(ctx, []msg.Op{{Kind: msg.OpRead, Block: block, Offset: offset, Length: length}})
	if err != nil {
		return nil, err
	}
	return out.Results[0].Data, nil
}

// Write writes data into block at offset.
func (c *Client) Write(ctx context.Context, block uint64, offset int, data []byte) error {
	_, err := c.Txn(ctx, []msg.Op{{Kind: msg.OpWrite, Block: block, Offset: offset, Data: data}})
	return err
}

// Xor xors data into block at offset.
func (c *Client) Xor(ctx context.Context, block uint64, offset int, data []byte) error {
	_, err := c.Txn(ctx, []msg.Op{{Kind: msg.OpXor, Block: block, Offset: offset, Data: data}})
	return err
}

// Add adds delta to the little-endian uint64 at offset and returns the new
// value.
func (c *Client) Add(ctx context.Context, block uint64, offset int, delta uint64) (uint64, error) {
	out, err := c.Txn(ctx, []msg.Op{{Kind: msg.OpAdd, Block: block, Offset: offset, Delta: delta}})
	if err != nil {
		return 0, err
	}
	return out.Results[0].Value, nil
}

// Cas writes data at offset if the bytes there equal expect. It returns
// whether it swapped and the bytes that were there.
func (c *Client) Cas(ctx context.Context, block uint64, offset int, expect, data []byte) (bool, []byte, error) {
	out, err := c.Txn(ctx, []msg.Op{{Kind: msg.OpCas, Block: block, Offset: offset, Expect: expect, Data: data}})
	if err != nil {
		return false, nil, err
	}
	return out.Results[0].OK, out.Results[0].Data, nil
}
