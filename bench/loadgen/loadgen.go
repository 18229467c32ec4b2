// Package loadgen is the closed-loop load generator that amalgam-bench
// vs-etcd uses for every system it compares. It runs in the amalgam-etcd
// program (the nested module bench/etcd), which drives Amalgam through the
// Go client and etcd through etcd's Go client with this same code: clients,
// warm-up, measured interval, operation mix and latency summary. The
// client's write benchmark and e2e's NBD benchmark run their clients
// through it too.
package loadgen

import (
	"context"
	"encoding/binary"
	"fmt"
	mrand "math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amalgam-store/amalgam/msg"
)

// The workloads.
const (
	// Write replaces a whole block with a payload of BlockSize bytes.
	Write = "write"
	// Add increments the little-endian uint64 at offset 0 of a block
	// (read-modify-write): Amalgam's add op, or a get and a
	// compare-and-put retried on conflict for a key-value store.
	Add = "add"
)

// Systems are the systems amalgam-etcd load drives: etcd through its Go
// client, the others (amalgam-server dev, --protocol for the baselines)
// through Amalgam's.
var Systems = []string{"etcd", "amalgam", "shardedpaxos", "rspaxos"}

// Unsupported says why system does not run workload, or "" if it does.
// RSPaxos has no add: its client makes one of a GET then a PUT, not
// isolated from other clients' writes, so it is not the operation the
// others run (one atomic increment).
func Unsupported(system, workload string) string {
	if system == "rspaxos" && workload == Add {
		return "rspaxos has no add (its client runs a GET then a PUT, not isolated): run it on write workloads"
	}
	return ""
}

// Spec is one closed-loop run.
type Spec struct {
	Workload  string        `json:"workload"`
	BlockSize int           `json:"block_size"`
	Blocks    uint64        `json:"blocks"` // keys are block ids 0..Blocks-1, uniform
	Clients   int           `json:"clients"`
	Warmup    time.Duration `json:"warmup"`
	Duration  time.Duration `json:"duration"`
	Seed      uint64        `json:"seed"`
	// MinOps, if set, extends the measured interval past Duration until
	// that many operations completed (bounded only by the context), so
	// that a starved machine gives a longer run rather than an empty one.
	MinOps int64 `json:"min_ops,omitempty"`
	// Ops, if set, measures exactly that many operations (a Go
	// benchmark's b.N) instead of for Duration; MinOps then plays no part.
	Ops int64 `json:"ops,omitempty"`
}

// Validate checks the spec.
func (s Spec) Validate() error {
	switch {
	case s.Workload != Write && s.Workload != Add:
		return fmt.Errorf("workload must be %s or %s, got %q", Write, Add, s.Workload)
	case s.BlockSize < 8:
		return fmt.Errorf("block size must be at least 8 bytes, got %d", s.BlockSize)
	case s.Blocks < 1:
		return fmt.Errorf("need at least one block")
	case s.Clients < 1:
		return fmt.Errorf("need at least one client, got %d", s.Clients)
	case s.Warmup < 0 || s.Duration <= 0 && s.Ops <= 0:
		return fmt.Errorf("warm-up must not be negative, and the duration or the operations must be positive")
	}
	return nil
}

// Result summarises the measured interval.
type Result struct {
	Seconds float64 `json:"seconds"`
	Ops     int64   `json:"ops"`
	Errors  int64   `json:"errors"`
	// Retries counts conflicts a client retried (a key-value store's
	// compare-and-put that lost a race); 0 for Amalgam.
	Retries   int64   `json:"retries"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MBPerSec  float64 `json:"mb_per_sec"` // Ops x BlockSize, 10^6 B/s
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	P999ms    float64 `json:"p999_ms"`
	// FirstError is the first failed operation's error, if any.
	FirstError string `json:"first_error,omitempty"`
}

// Doer performs one operation for one client; it returns how many times
// it retried on a conflict.
type Doer interface {
	Do(ctx context.Context, op msg.Op) (retries int, err error)
}

// TxnDoer runs each op as a one-op transaction of an Amalgam client
// (client.Client or client.Pool).
type TxnDoer struct {
	C interface {
		Txn(ctx context.Context, ops []msg.Op) (msg.Outcome, error)
	}
}

// Do implements Doer.
func (d TxnDoer) Do(ctx context.Context, op msg.Op) (int, error) {
	_, err := d.C.Txn(ctx, []msg.Op{op})
	return 0, err
}

// Gen draws one client's operations: a uniform block, then the
// workload's op on it.
type Gen struct {
	spec    Spec
	rnd     *mrand.Rand
	payload []byte
}

// NewGen returns client i's generator.
func NewGen(s Spec, i int) *Gen {
	g := &Gen{spec: s, rnd: mrand.New(mrand.NewSource(int64(s.Seed*1000003 + uint64(i))))}
	if s.Workload == Write {
		g.payload = make([]byte, s.BlockSize)
		g.rnd.Read(g.payload)
	}
	return g
}

// Next returns the next operation.
func (g *Gen) Next() msg.Op {
	b := uint64(g.rnd.Int63n(int64(g.spec.Blocks)))
	if g.spec.Workload == Add {
		return msg.Op{Kind: msg.OpAdd, Block: b, Delta: 1}
	}
	return msg.Op{Kind: msg.OpWrite, Block: b, Data: g.payload}
}

// ApplyAdd returns a copy of a stored value (nil: never written, i.e.
// zeros) of blockSize bytes with op's add applied, as Amalgam's add op
// does to a block.
func ApplyAdd(old []byte, blockSize int, op msg.Op) []byte {
	v := make([]byte, blockSize)
	copy(v, old)
	binary.LittleEndian.PutUint64(v[op.Offset:], binary.LittleEndian.Uint64(v[op.Offset:])+op.Delta)
	return v
}

// Run runs one closed-loop client per doer (each one operation at a
// time) for s.Warmup, then measures for s.Duration (or s.Ops
// operations). mark, if set, is called with "start" when the measured
// interval begins and "end" when it ends, so that the caller can read
// the servers' counters at those moments.
func Run(ctx context.Context, s Spec, doers []Doer, mark func(string)) Result {
	var phase atomic.Int32 // 0 warm-up, 1 measuring, 2 stopping
	var measured, claimed atomic.Int64
	type rec struct {
		lat           []time.Duration
		errs, retries int64
		firstErr      error
	}
	recs := make([]*rec, len(doers))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, d := range doers {
		r := &rec{}
		recs[i] = r
		g := NewGen(s, i)
		wg.Go(func() {
			for phase.Load() < 2 {
				// With s.Ops, an operation counts if it claimed one of
				// them when it began.
				counts := s.Ops > 0 && phase.Load() == 1
				if counts && claimed.Add(1) > s.Ops {
					return
				}
				op := g.Next()
				t0 := time.Now()
				n, err := d.Do(ctx, op)
				if s.Ops > 0 && !counts || s.Ops <= 0 && phase.Load() != 1 {
					continue
				}
				r.lat = append(r.lat, time.Since(t0))
				measured.Add(1)
				r.retries += int64(n)
				if err != nil {
					r.errs++
					if r.firstErr == nil {
						r.firstErr = err
					}
				}
			}
		})
	}
	select {
	case <-time.After(s.Warmup):
	case <-ctx.Done():
	}
	if mark != nil {
		mark("start")
	}
	start := time.Now()
	phase.Store(1)
	if s.Ops > 0 {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
	} else {
		select {
		case <-time.After(s.Duration):
		case <-ctx.Done():
		}
		for measured.Load() < s.MinOps && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	phase.Store(2)
	elapsed := time.Since(start)
	if mark != nil {
		mark("end")
	}
	cancel()
	wg.Wait()
	var all []time.Duration
	out := Result{Seconds: elapsed.Seconds()}
	for _, r := range recs {
		all = append(all, r.lat...)
		out.Errors += r.errs
		out.Retries += r.retries
		if r.firstErr != nil && out.FirstError == "" {
			out.FirstError = r.firstErr.Error()
		}
	}
	slices.Sort(all)
	out.Ops = int64(len(all))
	if out.Ops > 0 {
		out.OpsPerSec = float64(out.Ops) / elapsed.Seconds()
		out.MBPerSec = out.OpsPerSec * float64(s.BlockSize) / 1e6
		pct := func(q float64) float64 { return float64(all[min(len(all)-1, int(q*float64(len(all))))]) / 1e6 }
		out.P50ms, out.P99ms, out.P999ms = pct(0.50), pct(0.99), pct(0.999)
	}
	return out
}
