package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amalgam-store/amalgam/msg"
)

func TestGenIsSeededAndInRange(t *testing.T) {
	s := Spec{Workload: Add, BlockSize: 4096, Blocks: 10, Clients: 2, Duration: time.Second, Seed: 7}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	a, b, other := NewGen(s, 0), NewGen(s, 0), NewGen(s, 1)
	same := true
	for range 100 {
		x, y, z := a.Next(), b.Next(), other.Next()
		if x.Block != y.Block || x.Kind != msg.OpAdd || x.Delta != 1 || x.Block >= s.Blocks {
			t.Fatalf("op %+v, same seed gave %+v", x, y)
		}
		same = same && x.Block == z.Block
	}
	if same {
		t.Error("clients 0 and 1 drew the same blocks")
	}
	s.Workload = Write
	if op := NewGen(s, 0).Next(); op.Kind != msg.OpWrite || len(op.Data) != s.BlockSize {
		t.Errorf("write op %v with %d bytes", op.Kind, len(op.Data))
	}
	if err := (Spec{Workload: "read"}).Validate(); err == nil {
		t.Error("workload read accepted")
	}
}

func TestApplyAdd(t *testing.T) {
	v := ApplyAdd(nil, 16, msg.Op{Kind: msg.OpAdd, Delta: 5})
	if len(v) != 16 || binary.LittleEndian.Uint64(v) != 5 {
		t.Fatalf("from nothing: %x", v)
	}
	w := ApplyAdd(v, 16, msg.Op{Kind: msg.OpAdd, Offset: 8, Delta: 2})
	if binary.LittleEndian.Uint64(w) != 5 || binary.LittleEndian.Uint64(w[8:]) != 2 || binary.LittleEndian.Uint64(v[8:]) != 0 {
		t.Fatalf("%x from %x", w, v)
	}
}

type failing struct{}

func (failing) Do(context.Context, msg.Op) (int, error) { return 1, errors.New("no") }

// Run counts every measured operation, failed ones as errors, and calls
// mark with start then end.
func TestRunCountsErrors(t *testing.T) {
	s := Spec{Workload: Write, BlockSize: 8, Blocks: 4, Clients: 2, Duration: 20 * time.Millisecond}
	var marks []string
	r := Run(context.Background(), s, []Doer{failing{}, failing{}}, func(m string) { marks = append(marks, m) })
	if r.Errors != r.Ops || r.Retries != r.Ops || (r.Ops > 0) != (r.FirstError == "no") {
		t.Errorf("result %+v", r)
	}
	if len(marks) != 2 || marks[0] != "start" || marks[1] != "end" {
		t.Errorf("marks %v", marks)
	}
}

type counting struct{ n *atomic.Int64 }

func (c counting) Do(context.Context, msg.Op) (int, error) { c.n.Add(1); return 0, nil }

// With Ops, Run measures exactly that many operations, over all clients.
func TestRunOps(t *testing.T) {
	var n atomic.Int64
	s := Spec{Workload: Write, BlockSize: 8, Blocks: 4, Clients: 3, Ops: 50}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	r := Run(context.Background(), s, []Doer{counting{&n}, counting{&n}, counting{&n}}, nil)
	if r.Ops != 50 || r.Errors != 0 || n.Load() < 50 {
		t.Errorf("result %+v after %d calls, want 50 ops", r, n.Load())
	}
}

func TestUnsupported(t *testing.T) {
	for _, sys := range Systems {
		for _, w := range []string{Write, Add} {
			why := Unsupported(sys, w)
			if want := sys == "rspaxos" && w == Add; (why != "") != want {
				t.Errorf("Unsupported(%s, %s) = %q, want refusal %v", sys, w, why, want)
			}
		}
	}
}
