package harness

import (
	"fmt"
	mrand "math/rand"
	"sync/atomic"

	"github.com/amalgam-store/amalgam/msg"
)

// Workload is a seeded mix of operations.
type Workload struct {
	// Fractions of writes, reads and RMWs (normalised; all zero: writes).
	Write, Read, RMW float64
	// Keys: "uniform", "zipf" (s=Zipf) or "seq" (every block once, in
	// order, shared by all clients; the run ends when all are written).
	Keys string
	Zipf float64
	Seed uint64
}

// String names the mix, e.g. "write" or "50% read / 50% rmw".
func (w Workload) String() string {
	switch {
	case w.Read == 0 && w.RMW == 0:
		return "write"
	case w.Write == 0 && w.RMW == 0:
		return "read"
	case w.Write == 0 && w.Read == 0:
		return "rmw"
	}
	t := w.Write + w.Read + w.RMW
	return fmt.Sprintf("%.0f%% write / %.0f%% read / %.0f%% rmw", 100*w.Write/t, 100*w.Read/t, 100*w.RMW/t)
}

// gen draws one client's operations. Every operation is on one block:
// a write replaces the block, a read returns it, and an RMW XORs it with
// a junk value covering the whole block (thesis 3.6.2: "we XOR the block
// with some junk value, but the operation is treated as a black box").
type gen struct {
	w         Workload
	blocks    uint64
	rnd       *mrand.Rand
	zipf      *mrand.Zipf
	seq       *atomic.Uint64 // shared by all clients for Keys == "seq"
	payload   []byte         // written data, shared (messages are immutable)
	junk      []byte
	exhausted bool
}

func newGen(w Workload, blocks uint64, blockSize int, client int, seq *atomic.Uint64) *gen {
	g := &gen{w: w, blocks: blocks, seq: seq,
		rnd: mrand.New(mrand.NewSource(int64(w.Seed*1000003 + uint64(client))))}
	if w.Keys == "zipf" {
		s := w.Zipf
		if s <= 1 {
			s = 1.1
		}
		g.zipf = mrand.NewZipf(g.rnd, s, 1, blocks-1)
	}
	g.payload = make([]byte, blockSize)
	g.junk = make([]byte, blockSize)
	g.rnd.Read(g.payload)
	g.rnd.Read(g.junk)
	return g
}

func (g *gen) block() (uint64, bool) {
	switch g.w.Keys {
	case "zipf":
		return g.zipf.Uint64(), true
	case "seq":
		n := g.seq.Add(1) - 1
		return n, n < g.blocks
	}
	return uint64(g.rnd.Int63n(int64(g.blocks))), true
}

// next returns the next transaction, or false when a "seq" run is done.
func (g *gen) next() ([]msg.Op, bool) {
	b, ok := g.block()
	if !ok {
		g.exhausted = true
		return nil, false
	}
	t := g.w.Write + g.w.Read + g.w.RMW
	x := g.rnd.Float64() * t
	switch {
	case t == 0 || x < g.w.Write:
		return []msg.Op{{Kind: msg.OpWrite, Block: b, Data: g.payload}}, true
	case x < g.w.Write+g.w.Read:
		return []msg.Op{{Kind: msg.OpRead, Block: b}}, true
	default:
		return []msg.Op{{Kind: msg.OpXor, Block: b, Data: g.junk}}, true
	}
}
