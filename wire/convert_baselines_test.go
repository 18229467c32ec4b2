package wire

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/amalgam-store/amalgam/baselines/rspaxos"
	"github.com/amalgam-store/amalgam/baselines/shardedpaxos"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
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
	for _, dir := range []string{"shardedpaxos", "rspaxos"} {
		for _, name := range exportedHashTypes(t, filepath.Join("..", "baselines", dir)) {
			if !seen[dir+"."+name] {
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

// typeName is "package.Type" for a message.
func typeName(m node.Message) string {
	t := reflect.TypeOf(m)
	return filepath.Base(t.PkgPath()) + "." + t.Name()
}

// exportedHashTypes lists the exported types of the package in dir (tests
// excluded) with a Hash(*node.Hasher) method: the package's messages. Its
// timers are unexported, and Replica and Client have Hash() uint64 on a
// pointer receiver.
func exportedHashTypes(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != "Hash" || fd.Recv == nil || len(fd.Recv.List) != 1 || fd.Type.Params.NumFields() != 1 {
				continue
			}
			if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok && id.IsExported() {
				names = append(names, id.Name)
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("found no message types in %s", dir)
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
			fill(rng, v)
			m := v.Interface().(node.Message)
			got := roundTrip(t, m)
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip changed %T:\n got %#v\nwant %#v", m, got, m)
			}
		}
	}
}

func sp(b isShardedPaxosMessage_Body) *Message {
	return &Message{Body: &Message_ShardedPaxos{ShardedPaxos: &ShardedPaxosMessage{Body: b}}}
}

func rs(b isRSPaxosMessage_Body) *Message {
	return &Message{Body: &Message_RsPaxos{RsPaxos: &RSPaxosMessage{Body: b}}}
}

// TestBaselineDecodeErrors: malformed baseline messages are rejected with
// a FieldError naming the field, not decoded or panicked on.
func TestBaselineDecodeErrors(t *testing.T) {
	b := &PaxosBallot{Round: 1}
	badOp := []*Op{{Kind: OpKind_OP_KIND_WRITE, Data: []byte{1}}, {Kind: 99}}
	cases := []struct {
		m     *Message
		field string
	}{
		{&Message{Body: &Message_ShardedPaxos{}}, "sharded_paxos.body"},
		{sp(nil), "sharded_paxos.body"},
		{sp(&ShardedPaxosMessage_P1A{}), "sharded_paxos.p1a.ballot"},
		{sp(&ShardedPaxosMessage_P1A{P1A: &PaxosP1A{Ballot: b, Member: -1}}), "sharded_paxos.p1a.member"},
		{sp(&ShardedPaxosMessage_P1A{P1A: &PaxosP1A{Ballot: &PaxosBallot{Leader: -2}}}), "sharded_paxos.p1a.ballot.leader"},
		{sp(&ShardedPaxosMessage_P1B{P1B: &ShardedPaxosP1B{Ballot: b, Entries: []*ShardedPaxosAccepted{nil}}}), "sharded_paxos.p1b.entries[0]"},
		{sp(&ShardedPaxosMessage_P1B{P1B: &ShardedPaxosP1B{Ballot: b, Entries: []*ShardedPaxosAccepted{
			{Ballot: b, Val: &ShardedPaxosValue{}}, {Val: &ShardedPaxosValue{}}}}}), "sharded_paxos.p1b.entries[1].ballot"},
		{sp(&ShardedPaxosMessage_P2A{P2A: &ShardedPaxosP2A{Ballot: b}}), "sharded_paxos.p2a.val"},
		{sp(&ShardedPaxosMessage_P2A{P2A: &ShardedPaxosP2A{Ballot: b, Val: &ShardedPaxosValue{Ops: badOp}}}), "sharded_paxos.p2a.val.ops[1].kind"},
		{sp(&ShardedPaxosMessage_P2A{P2A: &ShardedPaxosP2A{Ballot: b, Val: &ShardedPaxosValue{Ops: []*Op{nil}}}}), "sharded_paxos.p2a.val.ops[0]"},
		{sp(&ShardedPaxosMessage_P2B{P2B: &ShardedPaxosP2B{Ballot: b}}), "sharded_paxos.p2b.val"},
		{sp(&ShardedPaxosMessage_Nack{Nack: &PaxosNack{Ballot: b}}), "sharded_paxos.nack.promised"},
		{sp(&ShardedPaxosMessage_Heartbeat{Heartbeat: &PaxosHeartbeat{Ballot: b, Member: -5}}), "sharded_paxos.heartbeat.member"},
		{sp(&ShardedPaxosMessage_HeartbeatOk{HeartbeatOk: &PaxosHeartbeatOK{Member: 1}}), "sharded_paxos.heartbeat_ok.ballot"},
		{sp(&ShardedPaxosMessage_Learn{Learn: &ShardedPaxosLearn{Ballot: b, Entries: []*ShardedPaxosChosen{{Slot: 1}}}}), "sharded_paxos.learn.entries[0].val"},
		{sp(&ShardedPaxosMessage_Redirect{Redirect: &PaxosRedirect{Group: -1}}), "sharded_paxos.redirect.group"},
		{sp(&ShardedPaxosMessage_Redirect{Redirect: &PaxosRedirect{Leader: -1}}), "sharded_paxos.redirect.leader"},

		{&Message{Body: &Message_RsPaxos{}}, "rs_paxos.body"},
		{rs(nil), "rs_paxos.body"},
		{rs(&RSPaxosMessage_P1A{P1A: &PaxosP1A{Ballot: b, Member: -1}}), "rs_paxos.p1a.member"},
		{rs(&RSPaxosMessage_P1B{P1B: &RSPaxosP1B{Ballot: b, Entries: []*RSPaxosAccepted{{Ballot: b, Val: &RSPaxosValue{Kind: 3}}}}}), "rs_paxos.p1b.entries[0].val.kind"},
		{rs(&RSPaxosMessage_P2A{P2A: &RSPaxosP2A{Ballot: b, Val: &RSPaxosValue{Kind: 7}}}), "rs_paxos.p2a.val.kind"},
		{rs(&RSPaxosMessage_P2A{P2A: &RSPaxosP2A{Ballot: b, Val: &RSPaxosValue{Kind: -1}}}), "rs_paxos.p2a.val.kind"},
		{rs(&RSPaxosMessage_P2A{P2A: &RSPaxosP2A{Ballot: b}}), "rs_paxos.p2a.val"},
		{rs(&RSPaxosMessage_P2B{P2B: &RSPaxosP2B{Ballot: b, Val: &RSPaxosID{Kind: 4}}}), "rs_paxos.p2b.val.kind"},
		{rs(&RSPaxosMessage_P2B{P2B: &RSPaxosP2B{Ballot: b}}), "rs_paxos.p2b.val"},
		{rs(&RSPaxosMessage_Nack{Nack: &PaxosNack{Ballot: b, Promised: &PaxosBallot{Leader: -1}}}), "rs_paxos.nack.promised.leader"},
		{rs(&RSPaxosMessage_Heartbeat{}), "rs_paxos.heartbeat.ballot"},
		{rs(&RSPaxosMessage_HeartbeatOk{HeartbeatOk: &PaxosHeartbeatOK{Ballot: b, Member: -3}}), "rs_paxos.heartbeat_ok.member"},
		{rs(&RSPaxosMessage_Learn{Learn: &RSPaxosLearn{Ballot: b, Entries: []*RSPaxosChosen{nil}}}), "rs_paxos.learn.entries[0]"},
		{rs(&RSPaxosMessage_PieceReply{PieceReply: &RSPaxosPieceReply{Member: -1}}), "rs_paxos.piece_reply.member"},
		{rs(&RSPaxosMessage_Redirect{Redirect: &PaxosRedirect{Leader: -4}}), "rs_paxos.redirect.leader"},
	}
	for _, tc := range cases {
		m, err := MessageFromProto(tc.m)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("decoding %v: got %#v, err %v, want a FieldError on %s", tc.m, m, err, tc.field)
		}
		if err != nil && m != nil {
			t.Errorf("decoding %v: error %v but also a message %#v", tc.m, err, m)
		}
	}
}

// FuzzBaselineFromProto feeds arbitrary bytes to the baseline messages'
// decoder. It must not panic; whatever it rejects must be a FieldError,
// and whatever it accepts must survive another round trip unchanged.
// Seeds: the round-trip cases.
func FuzzBaselineFromProto(f *testing.F) {
	for _, m := range baselineCases() {
		p, err := MessageToProto(m)
		if err != nil {
			f.Fatal(err)
		}
		b, err := proto.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Message
		if proto.Unmarshal(b, &p) != nil {
			return
		}
		switch p.GetBody().(type) {
		case *Message_ShardedPaxos, *Message_RsPaxos:
		default:
			return
		}
		m, err := MessageFromProto(&p)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Fatalf("rejection %v is not a FieldError naming a field", err)
			}
			return
		}
		if got := roundTrip(t, m); !reflect.DeepEqual(got, m) {
			t.Fatalf("second round trip changed the message:\n got %#v\nwant %#v", got, m)
		}
	})
}
