package wirecodec

import (
	"errors"
	"math/rand/v2"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
	"github.com/amalgam-store/amalgam/wire/wiretest"
)

// baselineCases are round-trip cases for every message type of
// baselines/shardedpaxos and baselines/rspaxos, with the edge cases that matter.
func baselineCases() []node.Message {
	ops := []msg.Op{
		{Kind: msg.OpWrite, Block: 3, Offset: 2, Data: []byte{1, 2}},
		{Kind: msg.OpCas, Block: 3, Expect: []byte{0}, Data: []byte{9}},
		{Kind: msg.OpRead, Block: 4, Length: 8},
	}
	spb := shardedpaxos.Ballot{Round: 7, Leader: 2}
	spv := shardedpaxos.Value{Client: 11, Seq: 4, From: "client/11", Ops: ops}
	spNoop := shardedpaxos.Value{Noop: true}
	rsb := rspaxos.Ballot{Round: 3, Leader: 1}
	rsPut := rspaxos.Value{Kind: rspaxos.Put, Client: 5, Seq: 9, From: "client/5", Block: 12, Piece: []byte{4, 5, 6}}
	rsGet := rspaxos.Value{Kind: rspaxos.Get, Client: 6, Seq: 1, From: "client/6", Block: 2}
	rsNoop := rspaxos.Value{Kind: rspaxos.Noop}
	rsEmpty := rspaxos.Value{Kind: rspaxos.Put, Client: 5, Seq: 10, From: "client/5", Block: 12, Piece: []byte{}}
	return []node.Message{
		shardedpaxos.P1a{Ballot: spb, Member: 2, From: 40},
		shardedpaxos.P1a{}, // the zero ballot, member 0
		shardedpaxos.P1b{Ballot: spb, Member: 1},
		shardedpaxos.P1b{Ballot: spb, Member: 1, Entries: []shardedpaxos.Accepted{
			{Slot: 41, Ballot: shardedpaxos.Ballot{Round: 6}, Val: spv},
			{Slot: 42, Ballot: spb, Val: spNoop},
		}},
		shardedpaxos.P2a{Ballot: spb, Member: 2, Slot: 43, Val: spv, Commit: 40, GC: 30},
		shardedpaxos.P2a{Ballot: spb, Member: 2, Slot: 44, Val: spNoop},
		shardedpaxos.P2a{Ballot: spb, Member: 2, Slot: 45, Val: shardedpaxos.Value{Client: 1, Seq: 1, From: "client/1"}}, // no ops
		shardedpaxos.P2b{Ballot: spb, Member: 0, Slot: 43, Val: spv.ID()},
		shardedpaxos.P2b{Member: 3, Slot: 44, Val: spNoop.ID()},
		shardedpaxos.Nack{Ballot: spb, Member: 1, Promised: shardedpaxos.Ballot{Round: 8, Leader: 0}},
		shardedpaxos.Heartbeat{Ballot: spb, Member: 2, Commit: 50, GC: 20},
		shardedpaxos.HeartbeatOK{Ballot: spb, Member: 4, Applied: 49},
		shardedpaxos.Learn{Ballot: spb, Member: 2},
		shardedpaxos.Learn{Ballot: spb, Member: 2, Entries: []shardedpaxos.Chosen{{Slot: 3, Val: spv}, {Slot: 4, Val: spNoop}}},
		shardedpaxos.Redirect{Seq: 4, Group: 3, Leader: 1},
		shardedpaxos.Redirect{},

		rspaxos.P1a{Ballot: rsb, Member: 1, From: 8},
		rspaxos.P1a{},
		rspaxos.P1b{Ballot: rsb, Member: 0},
		rspaxos.P1b{Ballot: rsb, Member: 0, Entries: []rspaxos.Accepted{
			{Slot: 9, Ballot: rspaxos.Ballot{Round: 2, Leader: 4}, Val: rsPut},
			{Slot: 10, Ballot: rsb, Val: rsGet},
			{Slot: 11, Ballot: rsb, Val: rsNoop},
			{Slot: 12, Ballot: rsb, Val: rsEmpty},
			{Slot: 13, Ballot: rsb, Val: rspaxos.Value{Kind: rspaxos.Put, Client: 7, Seq: 2, Block: 1}}, // piece not known
		}},
		rspaxos.P2a{Ballot: rsb, Member: 1, Slot: 14, Val: rsPut, Commit: 12, GC: 5},
		rspaxos.P2a{Ballot: rsb, Member: 1, Slot: 15, Val: rsEmpty},
		rspaxos.P2a{Ballot: rsb, Member: 1, Slot: 16, Val: rsNoop},
		rspaxos.P2b{Ballot: rsb, Member: 2, Slot: 14, Val: rsPut.ID()},
		rspaxos.P2b{Ballot: rsb, Member: 2, Slot: 16, Val: rsNoop.ID()},
		rspaxos.Nack{Ballot: rsb, Member: 3, Promised: rspaxos.Ballot{Round: 4, Leader: 2}},
		rspaxos.Heartbeat{Ballot: rsb, Member: 1, Commit: 16, GC: 10},
		rspaxos.HeartbeatOK{Ballot: rsb, Member: 0, Applied: 15},
		rspaxos.Learn{Ballot: rsb, Member: 1},
		rspaxos.Learn{Ballot: rsb, Member: 1, Entries: []rspaxos.Chosen{{Slot: 14, Val: rsPut}, {Slot: 15, Val: rsGet}, {Slot: 16, Val: rsEmpty}}},
		rspaxos.PieceReply{Member: 2, Slot: 10, Block: 2, Version: 9, Piece: []byte{7, 7}},
		rspaxos.PieceReply{Member: 2, Slot: 10, Block: 2, Version: 9, Missing: true},
		rspaxos.PieceReply{Member: 2, Slot: 10, Block: 2, Piece: []byte{}},
		rspaxos.Redirect{Seq: 3, Group: 1, Leader: 2},
	}
}

func TestBaselineRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range baselineCases() {
		got := roundTrip(t, m)
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip changed the message:\n got %#v\nwant %#v", got, m)
		}
		if node.HashOf(got) != node.HashOf(m) {
			t.Errorf("round trip changed the hash of %#v", m)
		}
		seen[typeName(m)] = true
	}
	core := exportedHashTypes(t, filepath.Join("..", "paxos")) // the messages both instantiate
	for _, dir := range []string{"shardedpaxos", "rspaxos"} {
		for _, name := range append(exportedHashTypes(t, filepath.Join("..", dir)), core...) {
			if !notMessages[name] && !seen[dir+"."+name] {
				t.Errorf("%s.%s has a Hash method but no wire round-trip test (and maybe no wire form)", dir, name)
			}
		}
	}

	// nil (not known) and empty pieces stay apart.
	v := roundTrip(t, rspaxos.P2a{Val: rspaxos.Value{Kind: rspaxos.Put}}).(rspaxos.P2a).Val
	if v.Piece != nil {
		t.Errorf("nil piece came back as %v", v.Piece)
	}
	v = roundTrip(t, rspaxos.P2a{Val: rspaxos.Value{Kind: rspaxos.Put, Piece: []byte{}}}).(rspaxos.P2a).Val
	if v.Piece == nil {
		t.Error("empty piece came back nil")
	}
	if pr := roundTrip(t, rspaxos.PieceReply{Piece: []byte{}}).(rspaxos.PieceReply); pr.Piece == nil {
		t.Error("empty PieceReply piece came back nil")
	}
}

// notMessages are the exported types with a Hash(*node.Hasher) method that
// are not messages.
var notMessages = map[string]bool{"Ballot": true, "Value": true, "ID": true, "ElectionTimer": true, "HeartbeatTimer": true, "Retry": true}

// typeName is "package.Type" for a message: for the core's messages, the
// package of the baseline that instantiates them.
func typeName(m node.Message) string {
	t := reflect.TypeOf(m)
	name, args, generic := strings.Cut(t.Name(), "[")
	if !generic {
		return path.Base(t.PkgPath()) + "." + name
	}
	arg, _, _ := strings.Cut(args, ",")
	return path.Base(arg[:strings.LastIndex(arg, ".")]) + "." + name
}

// exportedHashTypes is wiretest.HashTypes: the messages of the package in
// dir and the types in notMessages.
func exportedHashTypes(t *testing.T, dir string) []string {
	t.Helper()
	names, err := wiretest.HashTypes(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestBaselineEveryFieldSurvives fills every field of every baseline
// message type with random non-zero values and checks the round trip
// keeps them: a field added to a message but not to its wire form fails
// here.
func TestBaselineEveryFieldSurvives(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	types := map[reflect.Type]bool{}
	for _, m := range baselineCases() {
		types[reflect.TypeOf(m)] = true
	}
	for typ := range types {
		for i := 0; i < 20; i++ {
			v := reflect.New(typ).Elem()
			wiretest.Fill(rng, v, kinds(rng))
			m := v.Interface().(node.Message)
			got := roundTrip(t, m)
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip changed %T:\n got %#v\nwant %#v", m, got, m)
			}
		}
	}
}

// kinds fills an rspaxos.Kind with a kind other than Noop.
func kinds(rng *rand.Rand) func(reflect.Value) bool {
	return func(v reflect.Value) bool {
		if v.Type() != reflect.TypeOf(rspaxos.Kind(0)) {
			return false
		}
		v.SetUint(uint64(1 + rng.IntN(2))) // Get or Put
		return true
	}
}

// sp wraps a ShardedPaxos body (nil: none) in a Message. The bodies'
// interface type is unexported, hence reflection.
func sp(body any) *wire.Message {
	q := &wire.ShardedPaxosMessage{}
	setBody(q, body)
	return &wire.Message{Body: &wire.Message_ShardedPaxos{ShardedPaxos: q}}
}

// rs wraps an RSPaxos body (nil: none) in a Message.
func rs(body any) *wire.Message {
	q := &wire.RSPaxosMessage{}
	setBody(q, body)
	return &wire.Message{Body: &wire.Message_RsPaxos{RsPaxos: q}}
}

func setBody(q, body any) {
	if body != nil {
		reflect.ValueOf(q).Elem().FieldByName("Body").Set(reflect.ValueOf(body))
	}
}

// roundTrip encodes m, marshals it to bytes and back, and decodes it.
func roundTrip(t *testing.T, m node.Message) node.Message {
	t.Helper()
	var q wire.Message
	if err := proto.Unmarshal(marshal(t, m), &q); err != nil {
		t.Fatal(err)
	}
	got, err := wire.MessageFromProto(&q)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// marshal encodes m and marshals it to bytes.
func marshal(tb testing.TB, m node.Message) []byte {
	tb.Helper()
	p, err := wire.MessageToProto(m)
	var b []byte
	if err == nil {
		b, err = proto.Marshal(p)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestBaselineDecodeErrors: malformed baseline messages are rejected with
// a wire.FieldError naming the field, not decoded or panicked on.
func TestBaselineDecodeErrors(t *testing.T) {
	b := &wire.PaxosBallot{Round: 1}
	badOp := []*wire.Op{{Kind: wire.OpKind_OP_KIND_WRITE, Data: []byte{1}}, {Kind: 99}}
	cases := []struct {
		m     *wire.Message
		field string
	}{
		{&wire.Message{Body: &wire.Message_ShardedPaxos{}}, "sharded_paxos.body"},
		{sp(nil), "sharded_paxos.body"},
		{sp(&wire.ShardedPaxosMessage_P1A{}), "sharded_paxos.p1a.ballot"},
		{sp(&wire.ShardedPaxosMessage_P1A{P1A: &wire.PaxosP1A{Ballot: b, Member: -1}}), "sharded_paxos.p1a.member"},
		{sp(&wire.ShardedPaxosMessage_P1A{P1A: &wire.PaxosP1A{Ballot: &wire.PaxosBallot{Leader: -2}}}), "sharded_paxos.p1a.ballot.leader"},
		{sp(&wire.ShardedPaxosMessage_P1B{P1B: &wire.ShardedPaxosP1B{Ballot: b, Entries: []*wire.ShardedPaxosAccepted{nil}}}), "sharded_paxos.p1b.entries[0]"},
		{sp(&wire.ShardedPaxosMessage_P1B{P1B: &wire.ShardedPaxosP1B{Ballot: b, Entries: []*wire.ShardedPaxosAccepted{
			{Ballot: b, Val: &wire.ShardedPaxosValue{}}, {Val: &wire.ShardedPaxosValue{}}}}}), "sharded_paxos.p1b.entries[1].ballot"},
		{sp(&wire.ShardedPaxosMessage_P2A{P2A: &wire.ShardedPaxosP2A{Ballot: b}}), "sharded_paxos.p2a.val"},
		{sp(&wire.ShardedPaxosMessage_P2A{P2A: &wire.ShardedPaxosP2A{Ballot: b, Val: &wire.ShardedPaxosValue{Ops: badOp}}}), "sharded_paxos.p2a.val.ops[1].kind"},
		{sp(&wire.ShardedPaxosMessage_P2A{P2A: &wire.ShardedPaxosP2A{Ballot: b, Val: &wire.ShardedPaxosValue{Ops: []*wire.Op{nil}}}}), "sharded_paxos.p2a.val.ops[0]"},
		{sp(&wire.ShardedPaxosMessage_P2B{P2B: &wire.ShardedPaxosP2B{Ballot: b}}), "sharded_paxos.p2b.val"},
		{sp(&wire.ShardedPaxosMessage_Nack{Nack: &wire.PaxosNack{Ballot: b}}), "sharded_paxos.nack.promised"},
		{sp(&wire.ShardedPaxosMessage_Heartbeat{Heartbeat: &wire.PaxosHeartbeat{Ballot: b, Member: -5}}), "sharded_paxos.heartbeat.member"},
		{sp(&wire.ShardedPaxosMessage_HeartbeatOk{HeartbeatOk: &wire.PaxosHeartbeatOK{Member: 1}}), "sharded_paxos.heartbeat_ok.ballot"},
		{sp(&wire.ShardedPaxosMessage_Learn{Learn: &wire.ShardedPaxosLearn{Ballot: b, Entries: []*wire.ShardedPaxosChosen{{Slot: 1}}}}), "sharded_paxos.learn.entries[0].val"},
		{sp(&wire.ShardedPaxosMessage_Redirect{Redirect: &wire.PaxosRedirect{Group: -1}}), "sharded_paxos.redirect.group"},
		{sp(&wire.ShardedPaxosMessage_Redirect{Redirect: &wire.PaxosRedirect{Leader: -1}}), "sharded_paxos.redirect.leader"},

		{&wire.Message{Body: &wire.Message_RsPaxos{}}, "rs_paxos.body"},
		{rs(nil), "rs_paxos.body"},
		{rs(&wire.RSPaxosMessage_P1A{P1A: &wire.PaxosP1A{Ballot: b, Member: -1}}), "rs_paxos.p1a.member"},
		{rs(&wire.RSPaxosMessage_P1B{P1B: &wire.RSPaxosP1B{Ballot: b, Entries: []*wire.RSPaxosAccepted{{Ballot: b, Val: &wire.RSPaxosValue{Kind: 3}}}}}), "rs_paxos.p1b.entries[0].val.kind"},
		{rs(&wire.RSPaxosMessage_P2A{P2A: &wire.RSPaxosP2A{Ballot: b, Val: &wire.RSPaxosValue{Kind: 7}}}), "rs_paxos.p2a.val.kind"},
		{rs(&wire.RSPaxosMessage_P2A{P2A: &wire.RSPaxosP2A{Ballot: b, Val: &wire.RSPaxosValue{Kind: -1}}}), "rs_paxos.p2a.val.kind"},
		{rs(&wire.RSPaxosMessage_P2A{P2A: &wire.RSPaxosP2A{Ballot: b}}), "rs_paxos.p2a.val"},
		{rs(&wire.RSPaxosMessage_P2B{P2B: &wire.RSPaxosP2B{Ballot: b, Val: &wire.RSPaxosID{Kind: 4}}}), "rs_paxos.p2b.val.kind"},
		{rs(&wire.RSPaxosMessage_P2B{P2B: &wire.RSPaxosP2B{Ballot: b}}), "rs_paxos.p2b.val"},
		{rs(&wire.RSPaxosMessage_Nack{Nack: &wire.PaxosNack{Ballot: b, Promised: &wire.PaxosBallot{Leader: -1}}}), "rs_paxos.nack.promised.leader"},
		{rs(&wire.RSPaxosMessage_Heartbeat{}), "rs_paxos.heartbeat.ballot"},
		{rs(&wire.RSPaxosMessage_HeartbeatOk{HeartbeatOk: &wire.PaxosHeartbeatOK{Ballot: b, Member: -3}}), "rs_paxos.heartbeat_ok.member"},
		{rs(&wire.RSPaxosMessage_Learn{Learn: &wire.RSPaxosLearn{Ballot: b, Entries: []*wire.RSPaxosChosen{nil}}}), "rs_paxos.learn.entries[0]"},
		{rs(&wire.RSPaxosMessage_PieceReply{PieceReply: &wire.RSPaxosPieceReply{Member: -1}}), "rs_paxos.piece_reply.member"},
		{rs(&wire.RSPaxosMessage_Redirect{Redirect: &wire.PaxosRedirect{Leader: -4}}), "rs_paxos.redirect.leader"},
	}
	for _, tc := range cases {
		m, err := wire.MessageFromProto(tc.m)
		var fe *wire.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("decoding %v: got %#v, err %v, want a wire.FieldError on %s", tc.m, m, err, tc.field)
		}
		if err != nil && m != nil {
			t.Errorf("decoding %v: error %v but also a message %#v", tc.m, err, m)
		}
	}
}

// FuzzBaselineFromProto feeds arbitrary bytes to the baseline messages'
// decoder. It must not panic; whatever it rejects must be a wire.FieldError,
// and whatever it accepts must survive another round trip unchanged.
// Seeds: the round-trip cases.
func FuzzBaselineFromProto(f *testing.F) {
	for _, m := range baselineCases() {
		f.Add(marshal(f, m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p wire.Message
		if proto.Unmarshal(b, &p) != nil {
			return
		}
		switch p.GetBody().(type) {
		case *wire.Message_ShardedPaxos, *wire.Message_RsPaxos:
		default:
			return
		}
		m, err := wire.MessageFromProto(&p)
		if err != nil {
			var fe *wire.FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("rejection %v is not a wire.FieldError naming a field", err)
			}
			return
		}
		if got := roundTrip(t, m); !reflect.DeepEqual(got, m) {
			t.Fatalf("second round trip changed the message:\n got %#v\nwant %#v", got, m)
		}
	})
}
