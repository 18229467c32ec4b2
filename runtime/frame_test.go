package runtime

import (
	"context"
	"testing"

	"github.com/amalgam-store/amalgam/msg"
	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/wire"
)

func commitProto(t *testing.T, n uint64) *wire.Message {
	t.Helper()
	p, err := wire.MessageToProto(msg.Commit{OpNum: n})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStreamFramePacks: a frame carries every queued message from the
// cursor on, up to frameBytes in all (or one larger message alone).
func TestStreamFramePacks(t *testing.T) {
	o := &outStream{}
	if f, _ := o.frame(1); f != nil {
		t.Fatalf("empty queue: got a frame %v", f)
	}
	for seq := uint64(3); seq <= 7; seq++ {
		o.q = append(o.q, outEntry{seq: seq, m: commitProto(t, seq), size: frameBytes/2 - frameOverhead})
	}
	f, size := o.frame(1) // acknowledged up to 2 meanwhile: from 3 on
	if want := frameBytes - 2*frameOverhead; f.GetSeq() != 3 || len(f.GetMsgs()) != 2 || size != want {
		t.Fatalf("from 1: got seq %d, %d messages, %d bytes; want 3, 2, %d", f.GetSeq(), len(f.GetMsgs()), size, want)
	}
	f, _ = o.frame(7)
	if f.GetSeq() != 7 || len(f.GetMsgs()) != 1 || f.GetMsgs()[0] != o.q[4].m {
		t.Fatalf("from 7: got seq %d with %d messages", f.GetSeq(), len(f.GetMsgs()))
	}
	if f, _ := o.frame(8); f != nil {
		t.Fatalf("past the queue: got a frame %v", f)
	}
	o.q[0].size = 3 * frameBytes // a message larger than the bound goes alone
	if f, _ := o.frame(3); len(f.GetMsgs()) != 1 {
		t.Fatalf("a large first message: got %d messages in the frame", len(f.GetMsgs()))
	}
}

// TestStreamTakeOverlap: a frame resent after a reconnect may overlap what
// the receiver took; it takes the rest, once each and in order, and
// refuses a gap.
func TestStreamTakeOverlap(t *testing.T) {
	h := &Host{ctx: context.Background()}
	l := &loop{h: h, inbox: make(chan event, 16)}
	in := &inStream{sid: 9, fresh: true, changed: make(chan struct{})}
	ctx := context.Background()
	frame := func(from, to uint64) []*wire.Message {
		var ps []*wire.Message
		for n := from; n <= to; n++ {
			ps = append(ps, commitProto(t, n))
		}
		return ps
	}
	for _, f := range [][2]uint64{{1, 3}, {2, 5}, {1, 2}, {6, 6}} {
		if err := take(ctx, l, in, "data/0", 9, f[0], frame(f[0], f[1])); err != nil {
			t.Fatalf("frame %d..%d: %v", f[0], f[1], err)
		}
	}
	if err := take(ctx, l, in, "data/0", 9, 8, frame(8, 8)); err == nil {
		t.Fatal("a frame after a gap was taken")
	}
	close(l.inbox)
	var want uint64 = 1
	for ev := range l.inbox {
		if ev.seq != want || ev.m.(msg.Commit).OpNum != want || ev.sid != 9 {
			t.Fatalf("got seq %d (message %v), want %d", ev.seq, ev.m, want)
		}
		want++
	}
	if want != 7 || in.enq != 6 {
		t.Fatalf("took up to %d (enq %d), want 6", want-1, in.enq)
	}
}

// TestStreamAckRides: a frame to a peer carries the acknowledgement of the
// peer's stream to this node (its id and last persisted number), which
// then counts as sent; on the other side it acknowledges the stream to
// the frame's sender only if that stream's id matches.
func TestStreamAckRides(t *testing.T) {
	l := &loop{in: map[node.Addr]*inStream{}, ackOut: map[node.Addr]*outStream{}}
	if sid, n := l.ackOfPeer("parity/1"); sid != 0 || n != 0 {
		t.Fatalf("no stream from the peer: carried %d, %d", sid, n)
	}
	in := l.inStream("parity/1")
	in.mu.Lock()
	in.sid, in.persisted = 7, 5
	in.mu.Unlock()
	if sid, n := l.ackOfPeer("parity/1"); sid != 7 || n != 5 || in.toldSid != 7 || in.told != 5 {
		t.Fatalf("carried %d, %d (told %d, %d); want 7, 5", sid, n, in.toldSid, in.told)
	}

	o := &outStream{l: l, to: "parity/1", sid: 9}
	for seq := uint64(1); seq <= 4; seq++ {
		o.q = append(o.q, outEntry{seq: seq, m: commitProto(t, seq)})
	}
	l.ackOut["parity/1"] = o
	l.ackRiding("parity/1", 8, 3) // another stream's id: ignored
	l.ackRiding("parity/2", 9, 3) // another peer: ignored
	l.ackRiding("parity/1", 0, 3) // none
	if len(o.q) != 4 || o.acked != 0 {
		t.Fatalf("a mismatched acknowledgement was applied: %d queued, acked %d", len(o.q), o.acked)
	}
	l.ackRiding("parity/1", 9, 3)
	if len(o.q) != 1 || o.q[0].seq != 4 || o.acked != 3 {
		t.Fatalf("after acknowledging 3: %d queued, acked %d; want message 4 alone, acked 3", len(o.q), o.acked)
	}
}
