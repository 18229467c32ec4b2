package faults_test

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
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amalgam-store/amalgam/client"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/workload"
)

// load runs concurrent clients on the cluster and records every
// operation: mixed transactions on shared blocks, and every fourth one a
// counter written to the worker's own ledger block (to count lost writes).
type load struct {
	c       *cluster
	seed    uint64
	workers int
	shared  int // mixed operations run on blocks [0, shared)
	timeout time.Duration
	begin   time.Time

	mu       sync.Mutex
	history  []porcupine.Operation
	failed   []int64 // call times of operations that never returned
	acked    int     // acknowledged writes
	nextCID  int
	lastAck  []uint64
	inFlight [][]uint64
	stop     chan struct{}
	wg       sync.WaitGroup
}

func newLoad(c *cluster, seed uint64, workers int) *load {
	return &load{c: c, seed: seed, workers: workers, shared: 18, timeout: 20 * time.Second, begin: time.Now(),
		nextCID: workers, lastAck: make([]uint64, workers), inFlight: make([][]uint64, workers), stop: make(chan struct{})}
}

func (ld *load) now() int64 { return time.Since(ld.begin).Nanoseconds() }

func (ld *load) run() {
	for w := 0; w < ld.workers; w++ {
		ld.wg.Add(1)
		go ld.worker(w)
	}
}

func (ld *load) worker(w int) {
	defer ld.wg.Done()
	t, l := ld.c.t, ld.c.l
	dial := func() *client.Client {
		cl, err := client.Dial(context.Background(), ld.c.entries, client.Options{AttemptTimeout: time.Second})
		if err != nil {
			t.Errorf("worker %d: %v", w, err)
		}
		return cl
	}
	cl := dial()
	if cl == nil {
		return
	}
	defer func() { cl.Close() }()
	cid := w
	rnd := rand.New(rand.NewPCG(ld.seed, uint64(w)+2))
	var script [][]msg.Op
	var counter uint64
	for i := 0; ; i++ {
		select {
		case <-ld.stop:
			return
		default:
		}
		if len(script) == 0 {
			script = workload.Generate(rnd.Uint64, l, uint64(ld.shared), 256, workload.DefaultMix)
		}
		ops := script[0]
		script = script[1:]
		var ledgerVal uint64
		if i%4 == 3 {
			counter++
			ledgerVal = counter
			ops = []msg.Op{{Kind: msg.OpWrite, Block: uint64(ld.shared + w), Data: binary.LittleEndian.AppendUint64(nil, counter)}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), ld.timeout)
		call := ld.now()
		out, err := cl.Txn(ctx, ops)
		ret := ld.now()
		cancel()
		op := porcupine.Operation{ClientId: cid, Input: ops, Call: call}
		switch {
		case err == nil:
			op.Output, op.Return = msg.Reply{Outcome: out}, ret
		case errors.Is(err, client.ErrInvalid):
			t.Errorf("worker %d: %s refused: %v", w, workload.DescribeTxn(ops), err)
			return
		default:
			op.Output, op.Return = nil, math.MaxInt64 // may take effect any time later
		}
		ld.mu.Lock()
		ld.history = append(ld.history, op)
		if op.Output == nil {
			ld.failed = append(ld.failed, call)
			if ledgerVal > 0 {
				ld.inFlight[w] = append(ld.inFlight[w], ledgerVal)
			}
			cid = ld.nextCID // a client with an operation pending may not start another
			ld.nextCID++
		} else {
			if writesAny(ops) && !out.Aborted {
				ld.acked++
			}
			if ledgerVal > 0 {
				ld.lastAck[w] = ledgerVal
			}
		}
		ld.mu.Unlock()
		if op.Output == nil {
			t.Logf("worker %d: %s did not complete in %v: %v", w, workload.DescribeTxn(ops), ld.timeout, err)
			cl.Close()
			if cl = dial(); cl == nil {
				return
			}
		}
	}
}

// ops is the number of operations recorded so far.
func (ld *load) ops() int {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return len(ld.history)
}

// finish stops the clients, reads every block (the final reads join the
// history) and returns the acknowledged ledger writes that were lost.
func (ld *load) finish() (lost int) {
	close(ld.stop)
	ld.wg.Wait()
	t := ld.c.t
	cl, err := client.Dial(context.Background(), ld.c.entries, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for b := uint64(0); b < uint64(ld.shared+ld.workers); b++ {
		ops := []msg.Op{{Kind: msg.OpRead, Block: b}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*ld.timeout)
		call := ld.now()
		out, err := cl.Txn(ctx, ops)
		ret := ld.now()
		cancel()
		if err != nil {
			t.Fatalf("final read of block %d: %v", b, err)
		}
		ld.history = append(ld.history, porcupine.Operation{ClientId: ld.nextCID, Input: ops, Call: call,
			Output: msg.Reply{Outcome: out}, Return: ret})
		if w := int(b) - ld.shared; w >= 0 {
			if v := binary.LittleEndian.Uint64(out.Results[0].Data); v < ld.lastAck[w] {
				lost++
				t.Errorf("ledger of worker %d holds %d; %d was acknowledged (in flight: %v)", w, v, ld.lastAck[w], ld.inFlight[w])
			}
		}
	}
	return lost
}

// check runs porcupine over the whole history.
func (ld *load) check(timeout time.Duration) porcupine.CheckResult {
	l := ld.c.l
	res, info := porcupine.CheckOperationsVerbose(workload.Model(l), ld.history, timeout)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("amalgam-faults-%d.html", ld.seed))
		if f, err := os.Create(path); err == nil {
			_ = porcupine.Visualize(workload.Model(l), info, f)
			_ = f.Close()
		}
		ld.c.t.Errorf("history of %d operations is %s, not linearizable; visualization in %s", len(ld.history), res, path)
	}
	return res
}

// neverCompleted counts the operations that never returned although they
// started after a fault healed and their time ran out before the next
// fault (heals lists [healed, next fault] windows in load time).
func (ld *load) neverCompleted(windows [][2]time.Time) int {
	n := 0
	for _, call := range ld.failed {
		at := ld.begin.Add(time.Duration(call))
		for _, w := range windows {
			if !at.Before(w[0]) && at.Add(ld.timeout).Before(w[1]) {
				n++
				break
			}
		}
	}
	return n
}

func writesAny(ops []msg.Op) bool {
	for _, op := range ops {
		if op.Kind != msg.OpRead && op.Kind != msg.OpCheck {
			return true
		}
	}
	return false
}
