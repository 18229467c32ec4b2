package workload

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
	"github.com/anishathalye/porcupine"
)

var layout = erasure.Layout{N: 5, G: 3, F: 2, Stripes: 5, BlockSize: 16}

func TestGenerateIsValidAndSingleShard(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := map[msg.Kind]int{}
	multi := 0
	for _, txn := range Generate(rng.Uint64, layout, 0, 2000, DefaultMix) {
		shard := layout.Shard(txn[0].Block)
		owns := func(b uint64) bool { return b < layout.NumBlocks() && layout.Shard(b) == shard }
		if err := msg.ValidateTxn(txn, layout.BlockSize, owns); err != nil {
			t.Fatalf("generated an invalid transaction %s: %v", DescribeTxn(txn), err)
		}
		blocks := map[uint64]bool{}
		for _, op := range txn {
			kinds[op.Kind]++
			blocks[op.Block] = true
		}
		if len(blocks) > 1 {
			multi++
		}
	}
	for _, k := range []msg.Kind{msg.OpRead, msg.OpWrite, msg.OpXor, msg.OpAdd, msg.OpCas, msg.OpCheck} {
		if kinds[k] == 0 {
			t.Errorf("no %s op in 2000 transactions", k)
		}
	}
	if multi == 0 {
		t.Error("no multi-block transaction in 2000")
	}
}

func op(client int, call, ret int64, in []msg.Op, out msg.Reply) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
}

func write(b uint64, v byte) []msg.Op {
	return []msg.Op{{Kind: msg.OpWrite, Block: b, Data: []byte{v}}}
}

func read(b uint64) []msg.Op { return []msg.Op{{Kind: msg.OpRead, Block: b, Length: 1}} }

func readReply(v byte) msg.Reply {
	return msg.Reply{Outcome: msg.Outcome{Results: []msg.Result{{Data: []byte{v}}}}}
}

var writeReply = msg.Reply{Outcome: msg.Outcome{Results: []msg.Result{{}}}}

// check runs porcupine without a timeout: the histories here have a few
// operations, and a timeout would turn a slow machine into an Unknown
// that fails the test.
func check(t *testing.T, h []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	return porcupine.CheckOperationsTimeout(Model(layout), h, 0)
}

func TestModelAcceptsLinearizable(t *testing.T) {
	h := []porcupine.Operation{
		op(0, 0, 10, write(0, 7), writeReply),
		op(1, 5, 6, read(0), readReply(0)), // concurrent with the write: may see the old value
		op(1, 11, 12, read(0), readReply(7)),
	}
	if res := check(t, h); res != porcupine.Ok {
		t.Fatalf("linearizable history judged %s", res)
	}
}

func TestModelRejectsStaleRead(t *testing.T) {
	h := []porcupine.Operation{
		op(0, 0, 10, write(0, 7), writeReply),
		op(1, 11, 12, read(0), readReply(0)), // after the write returned: must see 7
	}
	if res := check(t, h); res != porcupine.Illegal {
		t.Fatalf("stale read judged %s, want illegal", res)
	}
}

func TestModelRejectsLostAdd(t *testing.T) {
	add := []msg.Op{{Kind: msg.OpAdd, Block: 1, Delta: 1}}
	reply := func(v uint64) msg.Reply {
		return msg.Reply{Outcome: msg.Outcome{Results: []msg.Result{{Value: v}}}}
	}
	h := []porcupine.Operation{
		op(0, 0, 1, add, reply(1)),
		op(1, 2, 3, add, reply(1)), // a second add cannot also see 0
	}
	if res := check(t, h); res != porcupine.Illegal {
		t.Fatalf("double-counted add judged %s, want illegal", res)
	}
}

func TestModelErrorsMustMatchValidation(t *testing.T) {
	bad := []msg.Op{{Kind: msg.OpWrite, Block: 0, Offset: 99, Data: []byte{1}}}
	if res := check(t, []porcupine.Operation{op(0, 0, 1, bad, msg.Reply{Err: "offset"})}); res != porcupine.Ok {
		t.Fatalf("rejected bad op judged %s", res)
	}
	if res := check(t, []porcupine.Operation{op(0, 0, 1, bad, writeReply)}); res != porcupine.Illegal {
		t.Fatalf("bad op that succeeded judged %s, want illegal", res)
	}
	if res := check(t, []porcupine.Operation{op(0, 0, 1, write(0, 1), msg.Reply{Err: "x"})}); res != porcupine.Illegal {
		t.Fatalf("valid op that failed judged %s, want illegal", res)
	}
}

// TestModelPending: an operation without a reply (output nil) is pending:
// it may take effect at any point after its call, or not at all, and its
// result is not checked.
func TestModelPending(t *testing.T) {
	const never = int64(1) << 62
	// The write is pending; a later read may see it or not.
	for _, v := range []byte{0, 7} {
		h := []porcupine.Operation{
			op(0, 0, never, write(0, 7), msg.Reply{}),
			op(1, 5, 6, read(0), readReply(v)),
		}
		h[0].Output = nil
		if res := check(t, h); res != porcupine.Ok {
			t.Fatalf("read of %d with the write pending judged %s", v, res)
		}
	}
	// A pending write cannot take effect before its call.
	h := []porcupine.Operation{
		op(1, 0, 1, read(0), readReply(7)),
		op(0, 2, never, write(0, 7), msg.Reply{}),
	}
	h[1].Output = nil
	if res := check(t, h); res != porcupine.Illegal {
		t.Fatalf("read seeing a write called later judged %s, want illegal", res)
	}
	// An invalid pending operation has no effect, and a pending one may
	// have any result.
	bad := []msg.Op{{Kind: msg.OpWrite, Block: 0, Offset: 99, Data: []byte{1}}}
	h = []porcupine.Operation{op(0, 0, never, bad, msg.Reply{}), op(1, 1, 2, read(0), readReply(0))}
	h[0].Output = nil
	if res := check(t, h); res != porcupine.Ok {
		t.Fatalf("invalid pending op judged %s", res)
	}
	if d := Model(layout).DescribeOperation(write(0, 7), nil); !strings.HasSuffix(d, "-> pending") {
		t.Fatalf("description of a pending op: %q", d)
	}
}

// sent lists the requests the client has sent; a client sends requests
// only, and never on a stream.
func sent(t *testing.T, ctx *nodetest.Ctx) []msg.Request {
	t.Helper()
	effs := ctx.Effects()
	reqs := nodetest.Msgs[msg.Request](effs)
	if len(reqs) != len(effs.Kind(nodetest.Send)) || len(effs.Kind(nodetest.Stream)) != 0 {
		t.Fatalf("client sent %v, want requests only", effs)
	}
	return reqs
}

func TestClientRetriesAndAdvances(t *testing.T) {
	script := [][]msg.Op{write(4, 1), read(4)}
	c := NewClient(9, layout, script)
	ctx := nodetest.New("client/0")
	c.Init(ctx)
	want := string(msg.DataAddr(layout.Shard(4)))
	to, timers := ctx.Effects().Kind(nodetest.Send).Addrs(), len(ctx.Effects().Kind(nodetest.Timer))
	if sends := sent(t, ctx); len(sends) != 1 || sends[0].Seq != 1 || sends[0].Client != 9 || to[0] != node.Addr(want) || timers != 1 {
		t.Fatalf("init sent %+v to %v with %d timers", sends, to, timers)
	}
	c.Timer(ctx, retry{Seq: 1})
	if sends := sent(t, ctx); len(sends) != 2 || sends[1].Seq != 1 {
		t.Fatalf("retry sent %+v", sends)
	}
	h0 := c.Hash()
	clone := c.Clone()
	c.Handle(ctx, "data/0", msg.Reply{Seq: 2}) // not the request in flight
	if c.Hash() != h0 || len(c.Replies()) != 0 {
		t.Fatal("a reply for another request changed the client")
	}
	c.Handle(ctx, "data/0", writeReply)
	if len(c.Replies()) != 0 {
		t.Fatal("reply with seq 0 accepted")
	}
	r := writeReply
	r.Seq = 1
	c.Handle(ctx, "data/0", r)
	if sends := sent(t, ctx); len(c.Replies()) != 1 || len(sends) != 3 || sends[2].Seq != 2 {
		t.Fatalf("after reply 1: %d replies, sends %+v", len(c.Replies()), sends)
	}
	c.Timer(ctx, retry{Seq: 1}) // stale timer
	if len(sent(t, ctx)) != 3 {
		t.Fatal("stale timer re-sent a request")
	}
	if clone.Hash() != h0 || clone.(*Client).Done() || len(clone.(*Client).Replies()) != 0 {
		t.Fatal("clone changed with the original")
	}
	r.Seq = 2
	c.Handle(ctx, "data/0", r)
	if !c.Done() || len(sent(t, ctx)) != 3 {
		t.Fatalf("client not done after both replies")
	}
}
