package reconfig

import (
	"slices"
	"testing"

	"github.com/amalgam-store/amalgam/msg"
)

func prep(op uint64, stripe int, stripes ...int) msg.Prepare {
	if len(stripes) == 0 {
		stripes = []int{stripe}
	}
	return msg.Prepare{Shard: 2, Primary: 1, OpNum: op, Stripe: stripe, Stripes: stripes}
}

func opNums(in msg.Install) []uint64 {
	var out []uint64
	for _, p := range in.Chain {
		if len(out) == 0 || out[len(out)-1] != p.OpNum {
			out = append(out, p.OpNum)
		}
	}
	return out
}

// The example of thesis 3.3.2.1: tau = 5 and PREPAREs {1,3,6,7,9,10}: 9 and
// 10 follow the gap at 8 and are dropped.
func TestChainThesisExample(t *testing.T) {
	answers := []msg.StopShardOK{
		{Shard: 2, OpNum: 5, Prepares: []msg.Prepare{prep(1, 0), prep(6, 0), prep(9, 0)}},
		{Shard: 2, OpNum: 2, Prepares: []msg.Prepare{prep(3, 1), prep(7, 1), prep(10, 1)}},
	}
	got := opNums(Chain(2, answers))
	if want := []uint64{1, 3, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("chain %v, want %v", got, want)
	}
}

// A multi-stripe operation after tau survives only with every stripe's part
// (3.3.4), and nothing after it survives otherwise.
func TestChainMultiStripe(t *testing.T) {
	answers := []msg.StopShardOK{
		{Shard: 2, OpNum: 1, Prepares: []msg.Prepare{prep(2, 0, 0, 1), prep(3, 0)}},
		{Shard: 2, Prepares: []msg.Prepare{prep(2, 1, 0, 1), prep(4, 0, 0, 1)}},
	}
	if got := opNums(Chain(2, answers)); !slices.Equal(got, []uint64{2, 3}) {
		t.Fatalf("chain %v, want [2 3] (4 lacks its stripe 1 part)", got)
	}
	answers[1].Prepares = answers[1].Prepares[1:] // lose op 2's stripe 1 part
	if got := opNums(Chain(2, answers)); len(got) != 0 {
		t.Fatalf("chain %v, want empty: op 2 is incomplete, so 3 follows a gap", got)
	}
}

// Operations up to tau committed: they stay even with a part missing (the
// missing part was applied everywhere and dropped).
func TestChainKeepsCommittedParts(t *testing.T) {
	answers := []msg.StopShardOK{{Shard: 2, OpNum: 4, Prepares: []msg.Prepare{prep(4, 0, 0, 1)}}}
	in := Chain(2, answers)
	if len(in.Chain) != 1 || in.Chain[0].OpNum != 4 || in.Upto != 4 {
		t.Fatalf("chain %+v up to %d, want op 4's stripe 0 part, up to 4", in.Chain, in.Upto)
	}
	// With no PREPARE at all, everything up to tau still survives: parity
	// servers outside the quorum apply what they hold up to there.
	if in := Chain(2, []msg.StopShardOK{{Shard: 2, OpNum: 3}}); len(in.Chain) != 0 || in.Upto != 3 {
		t.Fatalf("chain %+v up to %d, want empty up to 3", in.Chain, in.Upto)
	}
}

func TestChainClientRecords(t *testing.T) {
	reply := func(v uint64) *msg.Reply {
		return &msg.Reply{Outcome: msg.Outcome{Results: []msg.Result{{Value: v}}}}
	}
	p5 := prep(5, 0)
	p5.Client, p5.Seq, p5.Reply = 7, 3, reply(30)
	p6 := prep(6, 0)
	p6.Client, p6.Seq = 8, 9 // read-only: no reply to keep
	p9 := prep(9, 0)
	p9.Client, p9.Seq, p9.Reply = 7, 4, reply(40) // after a gap: dropped
	answers := []msg.StopShardOK{{Shard: 2, OpNum: 4, Prepares: []msg.Prepare{p5, p6, p9},
		Clients: []msg.ClientRecord{{Client: 7, Seq: 2, Reply: *reply(20)}, {Client: 8, Seq: 1, Reply: *reply(10)}}}}
	in := Chain(2, answers)
	if got := opNums(in); !slices.Equal(got, []uint64{5, 6}) {
		t.Fatalf("chain %v, want [5 6]", got)
	}
	want := []msg.ClientRecord{{Client: 7, Seq: 3, Reply: *reply(30)}, {Client: 8, Seq: 1, Reply: *reply(10)}}
	if len(in.Clients) != 2 || in.Clients[0].Seq != want[0].Seq || in.Clients[0].Reply.Outcome.Results[0].Value != 30 ||
		in.Clients[1].Seq != 1 {
		t.Fatalf("client records %+v, want %+v", in.Clients, want)
	}
}
