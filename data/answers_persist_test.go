package data

import (
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/node/nodetest"
)

// countingDisk is a node.Disk that counts the writes of each key.
type countingDisk struct {
	node.Disk
	puts map[string]int
}

func (d countingDisk) Put(k string, v []byte) {
	d.puts[k]++
	d.Disk.Put(k, v)
}

// answerKeys is the answer records on d.
func answerKeys(d node.Disk) []string {
	var ks []string
	for k := range d {
		if strings.HasPrefix(k, "n/") {
			ks = append(ks, k)
		}
	}
	return ks
}

// restored is a server restored from d, as a restarted machine makes it.
func restored(t *testing.T, d node.Disk) *Server {
	t.Helper()
	r := New(msg.InitialConfig(testLayout), me)
	r.TrackChanges()
	if err := r.Restore(d); err != nil {
		t.Fatal(err)
	}
	return r
}

// A snapshot answer is persisted under its own key when it is made and
// sent, without rewriting the rc record; a new nonce of the same run
// replaces it, and a restored server takes no second cut for the nonce
// it answered. Without its own key every answer rewrote (and Persist
// hashed) the records of every run answered in the configuration.
func TestAnswerRecords(t *testing.T) {
	s, ctx := newServer(t)
	d := countingDisk{node.Disk{}, map[string]int{}}
	s.TrackChanges()
	s.Persist(d)
	ask := func(nonce uint64) msg.StripeSnapshot {
		return msg.StripeSnapshot{Num: 0, Stripe: 0, Nonce: nonce, Requester: msg.DataAddr(1), Count: msg.RunCount(2)}
	}
	rcWrites := d.puts["rc"]
	for _, nonce := range []uint64{7, 8} {
		s.Handle(ctx, msg.DataAddr(1), ask(nonce))
		if got := nodetest.Msgs[msg.SnapshotData](ctx.Take()); len(got) != 1 || got[0].Nonce != nonce {
			t.Fatalf("answers %+v, want one of nonce %d", got, nonce)
		}
		s.Persist(d)
		if ks := answerKeys(d.Disk); len(ks) != 1 {
			t.Fatalf("answer records %v, want one for the run", ks)
		}
		if d.puts["rc"] != rcWrites {
			t.Fatalf("the rc record was rewritten for an answer (%d writes, was %d)", d.puts["rc"], rcWrites)
		}
		r := restored(t, d.Disk)
		rctx := nodetest.New(msg.DataAddr(me))
		r.Handle(rctx, msg.DataAddr(1), ask(nonce))
		if got := nodetest.Msgs[msg.SnapshotData](rctx.Take()); len(got) != 0 {
			t.Fatalf("restored server answered nonce %d again: %+v", nonce, got)
		}
		r.Handle(rctx, msg.DataAddr(1), ask(nonce+10))
		if got := nodetest.Msgs[msg.SnapshotData](rctx.Take()); len(got) != 1 || got[0].Nonce != nonce+10 {
			t.Fatalf("restored server's answers to a new nonce %+v, want one", got)
		}
	}
	// The configuration's end deletes the records.
	cfg := msg.InitialConfig(testLayout)
	cfg.Num, cfg.Parity[3], cfg.Changed = 1, 2, msg.ParityAddr(3)
	s.Handle(ctx, msg.ReconfigAddr, msg.NewConfig{Config: cfg})
	s.Persist(d)
	if ks := answerKeys(d.Disk); len(ks) != 0 {
		t.Fatalf("answer records %v after the configuration ended, want none", ks)
	}
}

// An rc record of an older build holds the answers itself: they are
// restored from it, and written under their own keys at the next Persist.
func TestAnswerRecordsFromOlderRC(t *testing.T) {
	s, _ := newServer(t)
	d := node.Disk{}
	s.TrackChanges()
	s.Persist(d)
	d["rc"] = node.GobBytes(dataRC{Inc: primary, Answers: []answerRec{
		{Requester: msg.DataAddr(1), Stripe: 0, Nonce: 7, Upto: 0, OpNum: 1, Sent: true},
		{Requester: msg.DataAddr(2), Stripe: 6, Nonce: 3, Upto: 0, OpNum: 1},
	}})
	r := restored(t, d)
	if len(r.rc.answers) != 2 || !r.rc.answers[1].sent || r.rc.unsent != 0 {
		t.Fatalf("restored answers %+v (unsent %d), want both, abandoned", r.rc.answers, r.rc.unsent)
	}
	r.Persist(d)
	again := restored(t, d)
	if len(again.rc.answers) != 2 || again.rc.answers[0].nonce != 7 || again.rc.answers[1].nonce != 3 {
		t.Fatalf("answers after a rewrite %+v, want both in order", again.rc.answers)
	}
	if ks := answerKeys(d); len(ks) != 2 {
		t.Fatalf("answer records %v, want two", ks)
	}
}
