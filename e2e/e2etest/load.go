package e2etest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/workload"
)

// Load runs concurrent clients on a cluster and records every operation:
// each worker runs one transaction at a time, mixed ones on the shared
// blocks [0, Shared), and every fourth one a counter written into its own
// ledger block Shared+w, so that a lost acknowledged write shows.
type Load struct {
	T       testing.TB
	Entries string // the cluster's address list
	Layout  erasure.Layout
	Seed    uint64
	Workers int
	Shared  int
	Timeout time.Duration // per operation; one that runs out stays pending

	begin    time.Time
	mu       sync.Mutex
	history  []porcupine.Operation
	failed   []int64 // call times of operations that never returned
	acked    int     // acknowledged transactions that write
	nextCID  int
	lastAck  []uint64   // ledger: last acknowledged counter
	inFlight [][]uint64 // ledger: counters of pending writes
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Start starts the workers; operation times count from now.
func (ld *Load) Start() {
	ld.begin = time.Now()
	ld.nextCID = ld.Workers
	ld.lastAck = make([]uint64, ld.Workers)
	ld.inFlight = make([][]uint64, ld.Workers)
	ld.stop = make(chan struct{})
	for w := 0; w < ld.Workers; w++ {
		ld.wg.Go(func() { ld.worker(w) })
	}
}

// Now is the time since Start, in the history's units.
func (ld *Load) Now() int64 { return time.Since(ld.begin).Nanoseconds() }

// Began is when Start ran.
func (ld *Load) Began() time.Time { return ld.begin }

func (ld *Load) dial() *client.Client {
	cl, err := client.Dial(context.Background(), ld.Entries, client.Options{AttemptTimeout: time.Second})
	if err != nil {
		ld.T.Errorf("dial %s: %v", ld.Entries, err)
		return nil
	}
	return cl
}

func (ld *Load) worker(w int) {
	t := ld.T
	cl := ld.dial()
	if cl == nil {
		return
	}
	defer func() { cl.Close() }()
	cid := w
	rnd := rand.New(rand.NewPCG(ld.Seed, uint64(w)+2))
	var script [][]msg.Op
	var counter uint64
	for i := 0; ; i++ {
		select {
		case <-ld.stop:
			return
		default:
		}
		if len(script) == 0 {
			script = workload.Generate(rnd.Uint64, ld.Layout, uint64(ld.Shared), 256, workload.DefaultMix)
		}
		ops := script[0]
		script = script[1:]
		var ledgerVal uint64
		if i%4 == 3 {
			counter++
			ledgerVal = counter
			ops = []msg.Op{{Kind: msg.OpWrite, Block: uint64(ld.Shared + w), Data: binary.LittleEndian.AppendUint64(nil, counter)}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), ld.Timeout)
		call := ld.Now()
		out, err := cl.Txn(ctx, ops)
		ret := ld.Now()
		cancel()
		op := porcupine.Operation{ClientId: cid, Input: ops, Call: call}
		switch {
		case err == nil:
			op.Output, op.Return = msg.Reply{Outcome: out}, ret
		case errors.Is(err, client.ErrInvalid):
			t.Errorf("worker %d: %s refused: %v", w, workload.DescribeTxn(ops), err)
			return
		default:
			// It may still take effect at any time, so it stays pending
			// to the end of the history.
			op.Output, op.Return = nil, math.MaxInt64
		}
		ld.mu.Lock()
		ld.record(op)
		if op.Output == nil {
			if ledgerVal > 0 {
				ld.inFlight[w] = append(ld.inFlight[w], ledgerVal)
			}
			cid = ld.nextCID // a client with an operation pending may not start another
			ld.nextCID++
		} else {
			if writes(ops) && !out.Aborted {
				ld.acked++
			}
			if ledgerVal > 0 {
				ld.lastAck[w] = ledgerVal
			}
		}
		ld.mu.Unlock()
		if op.Output == nil {
			t.Logf("worker %d: %s did not complete in %v (%v); recorded as pending", w, workload.DescribeTxn(ops), ld.Timeout, err)
			cl.Close()
			if cl = ld.dial(); cl == nil {
				return
			}
		}
	}
}

// record adds op to the history; ld.mu is held. An operation with no
// output is pending.
func (ld *Load) record(op porcupine.Operation) {
	ld.history = append(ld.history, op)
	if op.Output == nil {
		ld.failed = append(ld.failed, op.Call)
	}
}

// Record adds an operation another client ran to the history; one with no
// output is pending.
func (ld *Load) Record(op porcupine.Operation) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	ld.record(op)
}

// NewClientID returns a client id no worker uses.
func (ld *Load) NewClientID() int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	ld.nextCID++
	return ld.nextCID - 1
}

// Ops is the number of operations recorded so far.
func (ld *Load) Ops() int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return len(ld.history)
}

// Pending is the number of operations recorded that never returned.
func (ld *Load) Pending() int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return len(ld.failed)
}

// Acked is the number of acknowledged transactions that write.
func (ld *Load) Acked() int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return ld.acked
}

// Failed returns the call times of the operations that never returned.
func (ld *Load) Failed() []int64 {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return append([]int64(nil), ld.failed...)
}

// History returns the operations recorded so far.
func (ld *Load) History() []porcupine.Operation {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return append([]porcupine.Operation(nil), ld.history...)
}

// Stop stops the workers and waits for their transactions in flight to
// return or time out.
func (ld *Load) Stop() {
	ld.stopOnce.Do(func() { close(ld.stop) })
	ld.wg.Wait()
}

// FinalReads stops the workers, then reads blocks [0, blocks) one at a
// time and adds the reads to the history. A read that does not return
// within perRead is recorded as pending and tried again (under a new
// client id); the test fails only when ctx ends first. It fails the test
// for every ledger block that does not hold its worker's last
// acknowledged counter or a later pending one, and returns how many of
// those lost an acknowledged write, and what each block held.
func (ld *Load) FinalReads(ctx context.Context, blocks uint64, perRead time.Duration) (lost int, final [][]byte) {
	ld.Stop()
	t := ld.T
	cl, err := client.Dial(ctx, ld.Entries, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cid := ld.NewClientID()
	for b := uint64(0); b < blocks; b++ {
		ops := []msg.Op{{Kind: msg.OpRead, Block: b}}
		for {
			rctx, cancel := context.WithTimeout(ctx, perRead)
			call := ld.Now()
			out, err := cl.Txn(rctx, ops)
			ret := ld.Now()
			cancel()
			if err == nil {
				ld.Record(porcupine.Operation{ClientId: cid, Input: ops, Call: call, Output: msg.Reply{Outcome: out}, Return: ret})
				final = append(final, out.Results[0].Data)
				break
			}
			if ctx.Err() != nil || errors.Is(err, client.ErrInvalid) {
				t.Fatalf("final read of block %d: %v", b, err)
			}
			t.Logf("final read of block %d: %v; recorded as pending, reading again", b, err)
			ld.Record(porcupine.Operation{ClientId: cid, Input: ops, Call: call, Return: math.MaxInt64})
			cid = ld.NewClientID()
		}
	}
	for w := 0; w < ld.Workers && ld.Shared+w < len(final); w++ {
		got := binary.LittleEndian.Uint64(final[ld.Shared+w])
		ok := got == ld.lastAck[w]
		for _, p := range ld.inFlight[w] {
			ok = ok || (got == p && p > ld.lastAck[w])
		}
		if !ok {
			t.Errorf("worker %d's ledger block holds counter %d; the last acknowledged write was %d (pending: %v)",
				w, got, ld.lastAck[w], ld.inFlight[w])
		}
		if got < ld.lastAck[w] {
			lost++
		}
	}
	return lost, final
}

// Check runs porcupine over the history (workload.Check). When the
// history is not linearizable, it writes a visualization and returns its
// path.
func (ld *Load) Check(name string) (workload.Verdict, string) {
	v := workload.Check(ld.Layout, ld.History())
	if v.Result != porcupine.Illegal {
		return v, ""
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("amalgam-%s-%d.html", name, ld.Seed))
	if err := porcupine.VisualizePath(workload.Model(ld.Layout), v.Info, path); err != nil {
		ld.T.Logf("visualization: %v", err)
	}
	return v, path
}

// writes reports whether a transaction changes a block when it commits.
func writes(ops []msg.Op) bool {
	for _, op := range ops {
		if op.Kind != msg.OpRead && op.Kind != msg.OpCheck {
			return true
		}
	}
	return false
}
