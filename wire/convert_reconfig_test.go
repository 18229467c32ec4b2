package wire

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire/wiretest"
)

var testLayout = wiretest.Layout

func testConfig() msg.Config { return wiretest.Config() }

func TestReconfigRoundTrip(t *testing.T) {
	reply := msg.Reply{Seq: 9, Outcome: msg.Outcome{Results: []msg.Result{{Value: 3}, {Data: []byte{7}, OK: true}}}}
	preps := []msg.Prepare{
		{Shard: 2, Primary: 3, OpNum: 4, Stripe: 5, Pos: 1, Delta: []byte{1, 2}, Stripes: []int{5, 6}, Client: 8, Seq: 9, Reply: &reply},
		{Shard: 2, Primary: 3, OpNum: 5, Stripe: 6, Stripes: []int{6}},
	}
	clients := []msg.ClientRecord{{Client: 1, Seq: 2, Reply: reply}, {Client: 3, Seq: 4, Reply: msg.Reply{Seq: 4, Err: "x"}}}
	cases := []node.Message{
		msg.Replace{Role: erasure.RoleData, Machine: 2, Inc: 1},
		msg.Replace{Role: erasure.RoleWitness, Machine: 0, Inc: 5},
		msg.StopShard{Num: 3, Shard: 2, Primary: 1},
		msg.StopShardOK{Num: 3, Shard: 2, OpNum: 17, Prepares: preps, Clients: clients},
		msg.StopShardOK{Num: 3, Shard: 2},
		msg.StopBackup{Num: 4, Role: erasure.RoleParity, Machine: 1, Inc: 2},
		msg.StopBackupOK{Num: 4, Role: erasure.RoleWitness, Machine: 1},
		msg.NewConfig{Config: testConfig()},
		msg.NewConfig{Config: testConfig(), Install: &msg.Install{Shard: 2, Upto: 5, Chain: preps, Clients: clients}},
		msg.NewConfig{Config: msg.InitialConfig(testLayout), Install: &msg.Install{Shard: 0}},
		msg.ConfigOK{Num: 12},
		msg.Resending{Num: 3, Shard: 2, Backups: []node.Addr{msg.ParityAddr(1), msg.WitnessAddr(4)}},
		msg.Resending{Num: 3, Shard: 2},
		msg.Rebuilt{Role: erasure.RoleData, Machine: 2, Inc: 3},
		msg.Rebuilt{Role: erasure.RoleParity, Machine: 0, Inc: 2},
		msg.RebuiltOK{Role: erasure.RoleParity, Machine: 4, Inc: 7},
		msg.StripeSnapshot{Num: 1, Stripe: 3, Nonce: 1 << 60, Requester: msg.ParityAddr(4)},
		msg.SnapshotMarker{Num: 1, Stripe: 3, Nonce: 2, Requester: msg.DataAddr(0), Shard: 5},
		msg.SnapshotData{Num: 1, Stripe: 3, Nonce: 2, Shard: 5, Block: []byte{9, 9}, OpNum: 44, Primary: 3},
		msg.SnapshotData{Num: 1, Stripe: 3, Nonce: 2, Shard: 5, OpNum: 44},
		msg.SnapshotData{Num: 1, Stripe: 3, Nonce: 2, Shard: 5, Block: []byte{}},
		msg.SnapshotParity{Num: 2, Stripe: 1, Nonce: 3, Index: 1, Block: []byte{1}},
		msg.SnapshotParity{Num: 2, Stripe: 1, Nonce: 3, Index: 0},
	}
	types := roundTripAll(t, cases)
	if types != len(reconfigTypes) {
		t.Errorf("covered %d message types, want %d", types, len(reconfigTypes))
	}
	// nil (degraded) and empty blocks stay apart.
	if b := roundTrip(t, msg.SnapshotData{Num: 1}).(msg.SnapshotData).Block; b != nil {
		t.Errorf("nil block came back as %v", b)
	}
	if b := roundTrip(t, msg.SnapshotData{Block: []byte{}}).(msg.SnapshotData).Block; b == nil {
		t.Error("empty block came back nil")
	}
}

// reconfigTypes are the message types of msg/reconfig.go.
var reconfigTypes = []node.Message{
	msg.Replace{}, msg.StopShard{}, msg.StopShardOK{}, msg.StopBackup{}, msg.StopBackupOK{},
	msg.NewConfig{}, msg.ConfigOK{}, msg.Resending{}, msg.Rebuilt{}, msg.RebuiltOK{},
	msg.StripeSnapshot{}, msg.SnapshotMarker{}, msg.SnapshotData{}, msg.SnapshotParity{},
}

// TestEveryMessageTypeListed finds every type of package msg with a Hash
// method (a node.Message) in its source, and checks that the tests here
// cover it: a message added to msg without a wire form fails here.
func TestEveryMessageTypeListed(t *testing.T) {
	names, err := wiretest.HashTypes("../msg")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, n := range names {
		found[n] = true
	}
	listed := map[string]bool{}
	for _, m := range allMessages() {
		listed[reflect.TypeOf(m).Name()] = true
	}
	for name := range found {
		if !listed[name] && name != "Config" && name != "Op" && name != "Result" {
			t.Errorf("msg.%s has a Hash method but no wire round-trip test (and maybe no wire form)", name)
		}
	}
}

func allMessages() []node.Message {
	return append(append([]node.Message{}, reconfigTypes...),
		msg.Request{}, msg.Reply{}, msg.Prepare{}, msg.PrepareOK{}, msg.Commit{}, msg.PrepareDrop{})
}

// TestEveryFieldSurvives fills every field of every message type with
// random non-zero values and checks the round trip keeps them: a field
// added to a message but not to its wire form fails here.
func TestEveryFieldSurvives(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, proto := range allMessages() {
		for i := 0; i < 20; i++ {
			v := reflect.New(reflect.TypeOf(proto)).Elem()
			wiretest.Fill(rng, v, nil)
			m := v.Interface().(node.Message)
			got := roundTrip(t, m)
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip changed %T:\n got %#v\nwant %#v", m, got, m)
			}
		}
	}
}

func TestReconfigDecodeErrors(t *testing.T) {
	bad := testConfig()
	badProto := ConfigToProto(bad)
	badProto.Parity = badProto.Parity[:2]
	cases := []struct {
		m     *Message
		field string
	}{
		{&Message{Body: &Message_Replace{Replace: &Replace{Role: 0}}}, "replace.role"},
		{&Message{Body: &Message_StopBackup{StopBackup: &StopBackup{Role: 9}}}, "stop_backup.role"},
		{&Message{Body: &Message_Rebuilt{Rebuilt: &Rebuilt{Role: 0}}}, "rebuilt.role"},
		{&Message{Body: &Message_RebuiltOk{RebuiltOk: &RebuiltOK{Role: 4}}}, "rebuilt_ok.role"},
		{&Message{Body: &Message_NewConfig{NewConfig: &NewConfig{}}}, "new_config.config"},
		{&Message{Body: &Message_NewConfig{NewConfig: &NewConfig{Config: &Config{Layout: &Layout{}}}}}, "new_config.config.layout"},
		{&Message{Body: &Message_NewConfig{NewConfig: &NewConfig{Config: badProto}}}, "new_config.config.parity"},
		{&Message{Body: &Message_StopShardOk{StopShardOk: &StopShardOK{Prepares: []*Prepare{nil}}}}, "stop_shard_ok.prepares[0]"},
	}
	for _, tc := range cases {
		_, err := MessageFromProto(tc.m)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("decoding %v: err %v, want a FieldError on %s", tc.m, err, tc.field)
		}
	}
	c := testConfig()
	p := ConfigToProto(c)
	p.Changed = "data/99"
	if _, err := ConfigFromProto(p, "c"); err == nil {
		t.Error("accepted a changed server outside the layout")
	}
}
